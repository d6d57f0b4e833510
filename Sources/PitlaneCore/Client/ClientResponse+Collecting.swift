extension ClientResponse {
    /// Reads a streaming response that must hold exactly one message.
    init(collecting response: StreamingClientResponse<Message>) async {
        switch response.accepted {
        case .failure(let error):
            self.init(accepted: .failure(error))
        case .success(let contents):
            var message: Message?
            var trailing: Metadata = [:]
            do {
                for try await part in contents.bodyParts {
                    switch part {
                    case .message(let received):
                        guard message == nil else {
                            throw RPCError(code: .internal, message: "the server sent more than one response message")
                        }
                        message = received
                    case .trailingMetadata(let metadata):
                        trailing = metadata
                    }
                }
                guard let message else {
                    throw RPCError(code: .internal, message: "the server sent no response message")
                }
                self.init(accepted: .success(Contents(metadata: contents.metadata, message: message, trailingMetadata: trailing)))
            } catch {
                self.init(accepted: .failure(RPCError.from(error, unknownMessage: "reading the response failed: \(error)")))
            }
        }
    }
}
