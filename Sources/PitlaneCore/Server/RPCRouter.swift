import PitlaneProtobuf

/// Maps method paths to handlers; services register their methods into it.
public struct RPCRouter: Sendable {
    /// Runs one RPC, its request metadata still to be read. The closure is kept in
    /// a struct: stored in a dictionary as it is, it would be called through two thunks that
    /// adapt its calling convention, each a frame more under the handler for the whole RPC.
    @usableFromInline
    struct Handler: Sendable {
        @usableFromInline
        typealias Run =
            nonisolated(nonsending) @Sendable (
                _ stream: ServerRPCStream, _ transportContext: ServerTransportContext, _ settings: ServerRPCSettings,
                _ observerTag: Int
            ) async -> Void

        @usableFromInline let run: Run

        @usableFromInline
        init(run: @escaping Run) {
            self.run = run
        }
    }

    /// One method: its handler for each codec it can read and write, whether it may be
    /// served over HTTP GET, and its tag for the server's observer.
    @usableFromInline
    struct Entry: Sendable {
        var handlers: [MessageCodec: Handler]
        var idempotency: IdempotencyLevel
        var observerTag = 0

        @usableFromInline
        init(handlers: [MessageCodec: Handler], idempotency: IdempotencyLevel) {
            self.handlers = handlers
            self.idempotency = idempotency
        }
    }

    @usableFromInline
    private(set) var entries: [MethodDescriptor: Entry] = [:]

    /// Creates a router with no methods.
    public init() {}

    /// The methods registered.
    public var methods: [MethodDescriptor] { Array(entries.keys) }

    /// Registers the handler of one method with its own serializers, which carry the binary
    /// codec only; every RPC kind is registered in streaming form.
    @inlinable
    public mutating func registerHandler<Input: Sendable, Output: Sendable>(
        forMethod descriptor: MethodDescriptor, idempotency: IdempotencyLevel = .unknown,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) {
        entries[descriptor] = Entry(
            handlers: [.protobuf: Self.handler(deserializer, serializer, handler)], idempotency: idempotency
        )
    }

    /// Registers the handler of a method of generated messages, reachable with the binary
    /// codec and with the JSON mapping (Connect's `json` codec).
    @inlinable
    public mutating func registerHandler<Input: PitlaneProtobuf.Message, Output: PitlaneProtobuf.Message>(
        forMethod descriptor: MethodDescriptor, idempotency: IdempotencyLevel = .unknown,
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) {
        entries[descriptor] = Entry(
            handlers: [
                .protobuf: Self.handler(ProtobufDeserializer<Input>(), ProtobufSerializer<Output>(), handler),
                .json: Self.handler(JSONDeserializer<Input>(), JSONSerializer<Output>(), handler),
            ],
            idempotency: idempotency
        )
    }

    /// Registers a unary method of generated messages (binary and JSON codecs). Without
    /// server interceptors its calls take a path of their own: the request read straight from
    /// the stream and the response written straight to it, none of the streaming form's
    /// adapters between; with interceptors, which see every RPC in streaming form, it is
    /// served as `registerHandler` serves it.
    @inlinable
    public mutating func registerUnaryHandler<Input: PitlaneProtobuf.Message, Output: PitlaneProtobuf.Message>(
        forMethod descriptor: MethodDescriptor, idempotency: IdempotencyLevel = .unknown,
        handler: @escaping @Sendable (ServerRequest<Input>, ServerContext) async throws -> ServerResponse<Output>
    ) {
        entries[descriptor] = Entry(
            handlers: [
                .protobuf: Self.unaryHandler(ProtobufDeserializer<Input>(), ProtobufSerializer<Output>(), handler),
                .json: Self.unaryHandler(JSONDeserializer<Input>(), JSONSerializer<Output>(), handler),
            ],
            idempotency: idempotency
        )
    }

    @inlinable
    static func unaryHandler<Input: Sendable, Output: Sendable>(
        _ deserializer: some MessageDeserializer<Input>, _ serializer: some MessageSerializer<Output>,
        _ handler: @escaping @Sendable (ServerRequest<Input>, ServerContext) async throws -> ServerResponse<Output>
    ) -> Handler {
        let streaming = Self.handler(deserializer, serializer) { request, context in
            StreamingServerResponse(single: try await handler(ServerRequest(stream: request), context))
        }
        return Handler { stream, transportContext, settings, observerTag in
            guard settings.interceptors.isEmpty else {
                return await streaming.run(stream, transportContext, settings, observerTag)
            }
            await ServerRPCExecutor.runUnary(
                stream: stream, transportContext: transportContext, settings: settings,
                observedMethod: ObservedMethod(descriptor: stream.descriptor, tag: observerTag),
                deserializer: deserializer, serializer: serializer, handler: handler
            )
        }
    }

    @inlinable
    static func handler<Input: Sendable, Output: Sendable>(
        _ deserializer: some MessageDeserializer<Input>, _ serializer: some MessageSerializer<Output>,
        _ handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) -> Handler {
        Handler { stream, transportContext, settings, observerTag in
            await ServerRPCExecutor.run(
                stream: stream, transportContext: transportContext, settings: settings,
                observedMethod: ObservedMethod(descriptor: stream.descriptor, tag: observerTag),
                deserializer: deserializer, serializer: serializer, handler: handler
            )
        }
    }

    func entry(for descriptor: MethodDescriptor) -> Entry? { entries[descriptor] }

    /// The handler that serves an RPC of `descriptor` in the request's codec (and over GET,
    /// when it came so), with the method's observer tag; nil when none does.
    func handler(for descriptor: MethodDescriptor, _ transportContext: ServerTransportContext) -> (Handler, observerTag: Int)? {
        guard let entry = entries[descriptor], let handler = entry.handlers[transportContext.codec],
            !transportContext.requiresNoSideEffects || entry.idempotency == .noSideEffects
        else { return nil }
        return (handler, entry.observerTag)
    }

    /// Asks `observer` for each method's tag (``ServerCallObserver/tag(for:)``).
    mutating func tagMethods(for observer: any ServerCallObserver) {
        for descriptor in entries.keys { entries[descriptor]?.observerTag = observer.tag(for: descriptor) }
    }
}

/// Server-wide settings every RPC sees.
@usableFromInline
struct ServerRPCSettings: Sendable {
    @usableFromInline var interceptors: [any ServerInterceptor]
    @usableFromInline var maxRequestMessageBytes: Int
    @usableFromInline var observer: (any ServerCallObserver)?
    /// The observer's tag for methods the server does not serve.
    @usableFromInline var unservedObserverTag = 0
}
