/// Maps method paths to handlers; services register their methods into it.
public struct RPCRouter: Sendable {
    /// Runs one RPC on a stream whose request metadata has been read.
    typealias Handler = @Sendable (
        _ metadata: Metadata, _ inbound: RPCAsyncSequence<RPCRequestPart, any Error>,
        _ outbound: RPCWriter<RPCResponsePart>.Closable, _ context: ServerContext,
        _ settings: ServerRPCSettings
    ) async -> Void

    private(set) var handlers: [MethodDescriptor: Handler] = [:]

    public init() {}

    /// The methods registered.
    public var methods: [MethodDescriptor] { Array(handlers.keys) }

    /// Registers the handler of one method; every RPC kind is registered in streaming form.
    public mutating func registerHandler<Input: Sendable, Output: Sendable>(
        forMethod descriptor: MethodDescriptor,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) {
        handlers[descriptor] = { metadata, inbound, outbound, context, settings in
            await ServerRPCExecutor.run(
                metadata: metadata, inbound: inbound, outbound: outbound, context: context, settings: settings,
                deserializer: deserializer, serializer: serializer, handler: handler
            )
        }
    }

    func handler(for descriptor: MethodDescriptor) -> Handler? { handlers[descriptor] }
}

/// Server-wide settings every RPC sees.
struct ServerRPCSettings: Sendable {
    var interceptors: [any ServerInterceptor]
    var maxRequestMessageBytes: Int
}
