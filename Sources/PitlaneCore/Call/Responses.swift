/// The response to a unary or client-streaming call: metadata, one message, trailing
/// metadata — or an error.
public struct ClientResponse<Message: Sendable>: Sendable {
    /// What the server sent when the call succeeded.
    public struct Contents: Sendable {
        /// The initial metadata (response headers) the server sent.
        public var metadata: Metadata
        /// The single response message.
        public var message: Message
        /// The metadata the server sent with the OK status at the end of the call.
        public var trailingMetadata: Metadata
    }

    /// The response's contents when the call succeeded, or the error it ended with.
    public var accepted: Result<Contents, RPCError>

    /// Creates a response from its contents or the error the call ended with.
    public init(accepted: Result<Contents, RPCError>) {
        self.accepted = accepted
    }

    /// The message, or the call's error.
    public var message: Message {
        get throws { try accepted.get().message }
    }

    /// The server's initial metadata; empty if the call failed.
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
        /// A response message.
        case message(Message)
        /// The trailing metadata sent with an OK status; always the last part.
        case trailingMetadata(Metadata)
    }

    /// What the server sent when it accepted the call: its initial metadata and the rest of the response, still to be read.
    public struct Contents: Sendable {
        /// The initial metadata (response headers) the server sent.
        public var metadata: Metadata
        /// Messages and then trailing metadata; an error status ends it with `RPCError`.
        public var bodyParts: RPCAsyncSequence<BodyPart, any Error>

        /// Creates the contents of an accepted response from its initial metadata and the sequence of its body parts.
        public init(metadata: Metadata, bodyParts: RPCAsyncSequence<BodyPart, any Error>) {
            self.metadata = metadata
            self.bodyParts = bodyParts
        }
    }

    /// The response's contents when the server accepted the call, or the error the call ended with before any response.
    public var accepted: Result<Contents, RPCError>

    /// Creates a response from its contents or the error the call ended with.
    public init(accepted: Result<Contents, RPCError>) {
        self.accepted = accepted
    }

    /// Creates the response of a call that failed before the server sent a response.
    public init(error: RPCError) {
        accepted = .failure(error)
    }

    /// The server's initial metadata; empty if the call failed before the server sent any.
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
    /// What a handler that succeeds sends back.
    public struct Contents: Sendable {
        /// The initial metadata (response headers) to send.
        public var metadata: Metadata
        /// The single response message.
        public var message: Message
        /// The metadata to send with the OK status at the end of the call.
        public var trailingMetadata: Metadata

        /// Creates the contents from the message and optional initial and trailing metadata (empty by default).
        public init(message: Message, metadata: Metadata = [:], trailingMetadata: Metadata = [:]) {
            self.message = message
            self.metadata = metadata
            self.trailingMetadata = trailingMetadata
        }
    }

    /// The response's contents, or the error to end the call with instead.
    public var accepted: Result<Contents, RPCError>

    /// Creates a successful response from the message and optional initial and trailing metadata (empty by default).
    public init(message: Message, metadata: Metadata = [:], trailingMetadata: Metadata = [:]) {
        accepted = .success(Contents(message: message, metadata: metadata, trailingMetadata: trailingMetadata))
    }

    /// Creates a response that ends the call with `error` and sends no message.
    public init(error: RPCError) {
        accepted = .failure(error)
    }
}

/// What every handler returns in the end, and interceptors see: metadata, then a producer
/// that writes the response messages and returns the trailing metadata — or an error.
public struct StreamingServerResponse<Message: Sendable>: Sendable {
    /// What a handler that accepts the call sends back: initial metadata, and the producer of the rest.
    public struct Contents: Sendable {
        /// The initial metadata (response headers) to send.
        public var metadata: Metadata
        /// Writes the messages; returns trailing metadata. Throwing ends the RPC with the error.
        public var producer: @Sendable (RPCWriter<Message>) async throws -> Metadata

        /// Creates the contents from initial metadata (empty by default) and the producer that writes the messages.
        public init(metadata: Metadata = [:], producer: @escaping @Sendable (RPCWriter<Message>) async throws -> Metadata) {
            self.metadata = metadata
            self.producer = producer
        }
    }

    /// The response's contents, or the error to end the call with before any response is sent.
    public var accepted: Result<Contents, RPCError>

    /// Creates an accepted response whose producer writes the messages and returns the trailing metadata.
    ///
    /// - Parameters:
    ///   - type: The message type, to name it where the compiler cannot infer it.
    ///   - metadata: The initial metadata to send; empty by default.
    ///   - producer: Writes the response messages and returns the trailing metadata; throwing ends the call with the error.
    public init(
        of type: Message.Type = Message.self, metadata: Metadata = [:],
        producer: @escaping @Sendable (RPCWriter<Message>) async throws -> Metadata
    ) {
        accepted = .success(Contents(metadata: metadata, producer: producer))
    }

    /// Creates a response that ends the call with `error` before any response is sent.
    public init(error: RPCError) {
        accepted = .failure(error)
    }

    /// Converts a single-message response into the streaming form: the producer writes its one message and returns its trailing metadata.
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
