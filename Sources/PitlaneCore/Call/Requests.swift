/// A request with one message, as unary and server-streaming clients send it.
public struct ClientRequest<Message: Sendable>: Sendable {
    /// The metadata (request headers) to send with the call.
    public var metadata: Metadata
    /// The single request message.
    public var message: Message

    /// Creates a request from its message and optional metadata (empty by default).
    public init(message: Message, metadata: Metadata = [:]) {
        self.message = message
        self.metadata = metadata
    }
}

/// A request whose messages a producer writes, as client- and bidirectional-streaming
/// clients send it. Every call travels through interceptors in this form.
public struct StreamingClientRequest<Message: Sendable>: Sendable {
    /// The metadata (request headers) to send with the call.
    public var metadata: Metadata
    /// Writes the request messages; the stream ends when it returns.
    public var producer: @Sendable (RPCWriter<Message>) async throws -> Void

    /// Creates a request whose producer writes the messages.
    ///
    /// - Parameters:
    ///   - type: The message type, to name it where the compiler cannot infer it.
    ///   - metadata: The metadata to send with the call; empty by default.
    ///   - producer: Writes the request messages; the request stream ends when it returns, or with the error it throws.
    public init(
        of type: Message.Type = Message.self, metadata: Metadata = [:],
        producer: @escaping @Sendable (RPCWriter<Message>) async throws -> Void
    ) {
        self.metadata = metadata
        self.producer = producer
    }

    init(_ request: ClientRequest<Message>) {
        let message = request.message
        self.init(metadata: request.metadata) { try await $0.write(message) }
    }
}

/// A request with one message, as unary and server-streaming handlers receive it.
public struct ServerRequest<Message: Sendable>: Sendable {
    /// The metadata (request headers) the client sent.
    public var metadata: Metadata
    /// The single request message.
    public var message: Message

    /// Creates a request from the client's metadata and its one message.
    public init(metadata: Metadata, message: Message) {
        self.metadata = metadata
        self.message = message
    }
}

/// A request as a stream of messages; every handler receives its request in this form
/// first, and interceptors see it so.
public struct StreamingServerRequest<Message: Sendable>: Sendable {
    /// The metadata (request headers) the client sent.
    public var metadata: Metadata
    /// The request messages as the client sends them; iteration throws if the stream fails.
    public var messages: RPCAsyncSequence<Message, any Error>

    /// Creates a request from the client's metadata and its stream of messages.
    public init(metadata: Metadata, messages: RPCAsyncSequence<Message, any Error>) {
        self.metadata = metadata
        self.messages = messages
    }
}

extension ServerRequest {
    /// Reads a streaming request that must hold exactly one message, as unary and
    /// server-streaming handlers receive it.
    public init(stream request: StreamingServerRequest<Message>) async throws {
        var message: Message?
        for try await received in request.messages {
            guard message == nil else {
                throw RPCError(code: .internal, message: "the client sent more than one request message")
            }
            message = received
        }
        guard let message else { throw RPCError(code: .internal, message: "the client sent no request message") }
        self.init(metadata: request.metadata, message: message)
    }
}
