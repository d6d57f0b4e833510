/// The response to a unary or client-streaming call: metadata, one message, trailing
/// metadata — or an error.
public struct ClientResponse<Message: Sendable>: Sendable {
    public struct Contents: Sendable {
        public var metadata: Metadata
        public var message: Message
        public var trailingMetadata: Metadata
    }

    public var accepted: Result<Contents, RPCError>

    public init(accepted: Result<Contents, RPCError>) {
        self.accepted = accepted
    }

    /// The message, or the call's error.
    public var message: Message {
        get throws { try accepted.get().message }
    }

    public var metadata: Metadata {
        (try? accepted.get().metadata) ?? [:]
    }
}

/// The response to a server- or bidirectional-streaming call, read while the call runs.
///
/// ```swift
/// for try await message in response.messages { ... }   // throws RPCError if the call failed
/// ```
public struct StreamingClientResponse<Message: Sendable>: Sendable {
    /// A part of the response body.
    public enum BodyPart: Sendable {
        case message(Message)
        case trailingMetadata(Metadata)
    }

    public struct Contents: Sendable {
        public var metadata: Metadata
        /// Messages and then trailing metadata; an error status ends it with `RPCError`.
        public var bodyParts: RPCAsyncSequence<BodyPart, any Error>

        public init(metadata: Metadata, bodyParts: RPCAsyncSequence<BodyPart, any Error>) {
            self.metadata = metadata
            self.bodyParts = bodyParts
        }
    }

    public var accepted: Result<Contents, RPCError>

    public init(accepted: Result<Contents, RPCError>) {
        self.accepted = accepted
    }

    public init(error: RPCError) {
        accepted = .failure(error)
    }

    public var metadata: Metadata {
        (try? accepted.get().metadata) ?? [:]
    }

    /// The response messages; iteration throws the call's `RPCError` if it failed.
    public var messages: RPCAsyncSequence<Message, any Error> {
        switch accepted {
        case .success(let contents):
            if case .next(let nextPart) = contents.bodyParts.source {
                // One closure over the parts' own: no iterator level (and executor hop) more.
                RPCAsyncSequence {
                    while let part = try await nextPart() {
                        if case .message(let message) = part { return message }
                    }
                    return nil
                }
            } else {
                RPCAsyncSequence(
                    wrapping: MappedSequence(base: contents.bodyParts) { part in
                        if case .message(let message) = part { message } else { nil }
                    })
            }
        case .failure(let error):
            .failing(error)
        }
    }
}

/// What a unary or client-streaming handler returns: metadata, one message, trailing metadata.
public struct ServerResponse<Message: Sendable>: Sendable {
    public struct Contents: Sendable {
        public var metadata: Metadata
        public var message: Message
        public var trailingMetadata: Metadata

        public init(message: Message, metadata: Metadata = [:], trailingMetadata: Metadata = [:]) {
            self.message = message
            self.metadata = metadata
            self.trailingMetadata = trailingMetadata
        }
    }

    public var accepted: Result<Contents, RPCError>

    public init(message: Message, metadata: Metadata = [:], trailingMetadata: Metadata = [:]) {
        accepted = .success(Contents(message: message, metadata: metadata, trailingMetadata: trailingMetadata))
    }

    public init(error: RPCError) {
        accepted = .failure(error)
    }
}

/// What every handler returns in the end, and interceptors see: metadata, then a producer
/// that writes the response messages and returns the trailing metadata — or an error.
public struct StreamingServerResponse<Message: Sendable>: Sendable {
    public struct Contents: Sendable {
        public var metadata: Metadata
        /// Writes the messages; returns trailing metadata. Throwing ends the RPC with the error.
        public var producer: @Sendable (RPCWriter<Message>) async throws -> Metadata

        public init(metadata: Metadata = [:], producer: @escaping @Sendable (RPCWriter<Message>) async throws -> Metadata) {
            self.metadata = metadata
            self.producer = producer
        }
    }

    public var accepted: Result<Contents, RPCError>

    public init(
        of type: Message.Type = Message.self, metadata: Metadata = [:],
        producer: @escaping @Sendable (RPCWriter<Message>) async throws -> Metadata
    ) {
        accepted = .success(Contents(metadata: metadata, producer: producer))
    }

    public init(error: RPCError) {
        accepted = .failure(error)
    }

    public init(single response: ServerResponse<Message>) {
        switch response.accepted {
        case .success(let contents):
            let message = contents.message
            let trailing = contents.trailingMetadata
            self.init(metadata: contents.metadata) { writer in
                try await writer.write(message)
                return trailing
            }
        case .failure(let error):
            self.init(error: error)
        }
    }
}
