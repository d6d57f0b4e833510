import Synchronization

/// A gRPC client over a transport. Generated `Client` stubs wrap it.
///
/// ```swift
/// try await withGRPCClient(transport: transport) { client in
///     let kart = SwiftKartService.Client(wrapping: client)
///     let response = try await kart.listRaces(ListRacesRequest())
/// }
/// ```
///
/// For a long-lived client, run `runConnections()` in a task of its own and call
/// `beginGracefulShutdown()` to end it: RPCs in flight finish, new ones fail with `.unavailable`.
public final class GRPCClient<Transport: ClientTransport>: Sendable {
    private enum Lifecycle {
        case running(inFlight: Int)
        case shuttingDown(inFlight: Int)
        case stopped
    }

    /// The transport every RPC of this client runs on.
    public let transport: Transport
    private let executor: ClientRPCExecutor<Transport>
    private let lifecycle = Mutex(Lifecycle.running(inFlight: 0))

    /// Creates a client over `transport`; ``runConnections()`` must run, in a task of its own, while it makes RPCs.
    ///
    /// - Parameters:
    ///   - transport: the transport the client's RPCs run over.
    ///   - interceptors: applied to every RPC, the first outermost.
    ///   - retryBufferBytes: request bytes kept per RPC so it can be retried. Default 256 KiB.
    ///   - observer: told of every RPC's attempts and end (metrics: `ClientMetrics`). Default none.
    public init(
        transport: Transport, interceptors: [any ClientInterceptor] = [], retryBufferBytes: Int = 256 * 1024,
        observer: (any ClientCallObserver)? = nil
    ) {
        self.transport = transport
        executor = ClientRPCExecutor(
            transport: transport, interceptors: interceptors, retryBufferBytes: retryBufferBytes,
            observer: observer)
    }

    /// Runs the transport's connections until `beginGracefulShutdown()` and the last RPC end.
    public func runConnections() async throws {
        try await transport.connect()
    }

    /// Stops new RPCs (they fail with `.unavailable`); in-flight ones finish, then the
    /// transport shuts down and `runConnections()` returns.
    public func beginGracefulShutdown() {
        let shutDownTransport = lifecycle.withLock { lifecycle in
            switch lifecycle {
            case .running(let inFlight) where inFlight > 0:
                lifecycle = .shuttingDown(inFlight: inFlight)
                return false
            case .running, .shuttingDown(0):
                lifecycle = .stopped
                return true
            case .shuttingDown, .stopped:
                return false
            }
        }
        if shutDownTransport { transport.beginGracefulShutdown() }
    }

    private func enterRPC() throws {
        try lifecycle.withLock { lifecycle in
            guard case .running(let inFlight) = lifecycle else {
                throw RPCError(code: .unavailable, message: "the client is shutting down")
            }
            lifecycle = .running(inFlight: inFlight + 1)
        }
    }

    private func leaveRPC() {
        let shutDownTransport = lifecycle.withLock { lifecycle in
            switch lifecycle {
            case .running(let inFlight):
                lifecycle = .running(inFlight: inFlight - 1)
                return false
            case .shuttingDown(let inFlight) where inFlight > 1:
                lifecycle = .shuttingDown(inFlight: inFlight - 1)
                return false
            case .shuttingDown:
                lifecycle = .stopped
                return true
            case .stopped:
                return false
            }
        }
        if shutDownTransport { transport.beginGracefulShutdown() }
    }

    // MARK: RPCs

    /// How the transport writes messages: generated clients serialize to match.
    public var messageCodec: MessageCodec { transport.messageCodec }

    // The handlers below run in the caller's task and isolation (a main-actor caller may set
    // its own state in them); request producers run beside them in tasks of their own, so they
    // are `@Sendable`.

    /// A bidirectional-streaming RPC; every other kind is a special case of it.
    ///
    /// - Parameters:
    ///   - request: the metadata and the producer of the request messages.
    ///   - descriptor: the method.
    ///   - serializer: writes request messages in the transport's codec.
    ///   - deserializer: reads response messages in the transport's codec.
    ///   - options: the call's options; the service config fills in what they leave unset.
    ///   - isolation: the caller's actor, inherited; leave it to its default.
    ///   - handleResponse: reads the response while the call is open; runs where the caller does.
    /// - Returns: what `handleResponse` returns.
    public func bidirectionalStreaming<Request: Sendable, Response: Sendable, Result>(
        request: StreamingClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions = .defaults, isolation: isolated (any Actor)? = #isolation,
        onResponse handleResponse: (StreamingClientResponse<Response>) async throws -> Result
    ) async throws -> Result {
        try await run(
            request: request, descriptor: descriptor, serializer: serializer, deserializer: deserializer,
            options: options.with { $0.rpcKind = .bidirectionalStreaming }, isolation: isolation, onResponse: handleResponse)
    }

    private func run<Request: Sendable, Response: Sendable, Result>(
        request: StreamingClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions, isolation: isolated (any Actor)?,
        onResponse handleResponse: (StreamingClientResponse<Response>) async throws -> Result
    ) async throws -> Result {
        try enterRPC()
        defer { leaveRPC() }
        return try await executor.execute(
            request: request, descriptor: descriptor, serializer: serializer, deserializer: deserializer,
            options: options, isolation: isolation, onResponse: handleResponse
        )
    }

    /// A server-streaming RPC: one request, a stream of responses.
    ///
    /// - Parameters:
    ///   - request: the metadata and the request message.
    ///   - descriptor: the method.
    ///   - serializer: writes the request message in the transport's codec.
    ///   - deserializer: reads response messages in the transport's codec.
    ///   - options: the call's options; the service config fills in what they leave unset.
    ///   - isolation: the caller's actor, inherited; leave it to its default.
    ///   - handleResponse: reads the responses while the call is open; runs where the caller does.
    /// - Returns: what `handleResponse` returns.
    public func serverStreaming<Request: Sendable, Response: Sendable, Result>(
        request: ClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions = .defaults, isolation: isolated (any Actor)? = #isolation,
        onResponse handleResponse: (StreamingClientResponse<Response>) async throws -> Result
    ) async throws -> Result {
        try await run(
            request: StreamingClientRequest(request), descriptor: descriptor, serializer: serializer,
            deserializer: deserializer, options: options.with { $0.rpcKind = .serverStreaming }, isolation: isolation,
            onResponse: handleResponse
        )
    }

    /// A client-streaming RPC: a stream of requests, one response.
    ///
    /// - Parameters:
    ///   - request: the metadata and the producer of the request messages.
    ///   - descriptor: the method.
    ///   - serializer: writes request messages in the transport's codec.
    ///   - deserializer: reads the response message in the transport's codec.
    ///   - options: the call's options; the service config fills in what they leave unset.
    ///   - isolation: the caller's actor, inherited; leave it to its default.
    ///   - handleResponse: reads the response; runs where the caller does.
    /// - Returns: what `handleResponse` returns.
    public func clientStreaming<Request: Sendable, Response: Sendable, Result>(
        request: StreamingClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions = .defaults, isolation: isolated (any Actor)? = #isolation,
        onResponse handleResponse: (ClientResponse<Response>) async throws -> Result
    ) async throws -> Result {
        try await collecting(
            request: request, descriptor: descriptor, serializer: serializer, deserializer: deserializer,
            options: options.with { $0.rpcKind = .clientStreaming }, isolation: isolation, onResponse: handleResponse)
    }

    /// An RPC with one response message, which `handleResponse` reads where the caller is.
    private func collecting<Request: Sendable, Response: Sendable, Result>(
        request: StreamingClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions, isolation: isolated (any Actor)?,
        onResponse handleResponse: (ClientResponse<Response>) async throws -> Result
    ) async throws -> Result {
        try await run(
            request: request, descriptor: descriptor, serializer: serializer, deserializer: deserializer, options: options,
            isolation: isolation
        ) { response in
            try await handleResponse(await ClientResponse(collecting: response))
        }
    }

    /// A client-streaming RPC's response message: a stream of requests, one response; throws
    /// the RPC's error.
    ///
    /// - Parameters:
    ///   - request: the metadata and the producer of the request messages.
    ///   - descriptor: the method.
    ///   - serializer: writes request messages in the transport's codec.
    ///   - deserializer: reads the response message in the transport's codec.
    ///   - options: the call's options; the service config fills in what they leave unset.
    /// - Returns: the response message.
    public func clientStreaming<Request: Sendable, Response: Sendable>(
        request: StreamingClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions = .defaults
    ) async throws -> Response {
        try await message(
            request: request, descriptor: descriptor, serializer: serializer, deserializer: deserializer,
            options: options.with { $0.rpcKind = .clientStreaming })
    }

    /// A unary RPC: one request, one response.
    ///
    /// - Parameters:
    ///   - request: the metadata and the request message.
    ///   - descriptor: the method.
    ///   - serializer: writes the request message in the transport's codec.
    ///   - deserializer: reads the response message in the transport's codec.
    ///   - options: the call's options; the service config fills in what they leave unset.
    ///   - isolation: the caller's actor, inherited; leave it to its default.
    ///   - handleResponse: reads the response; runs where the caller does.
    /// - Returns: what `handleResponse` returns.
    public func unary<Request: Sendable, Response: Sendable, Result>(
        request: ClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions = .defaults, isolation: isolated (any Actor)? = #isolation,
        onResponse handleResponse: (ClientResponse<Response>) async throws -> Result
    ) async throws -> Result {
        try await collecting(
            request: StreamingClientRequest(request), descriptor: descriptor, serializer: serializer,
            deserializer: deserializer, options: options.with { $0.rpcKind = .unary }, isolation: isolation, onResponse: handleResponse)
    }

    /// A unary RPC's response message; throws the RPC's error.
    ///
    /// - Parameters:
    ///   - request: the metadata and the request message.
    ///   - descriptor: the method.
    ///   - serializer: writes the request message in the transport's codec.
    ///   - deserializer: reads the response message in the transport's codec.
    ///   - options: the call's options; the service config fills in what they leave unset.
    /// - Returns: the response message.
    public func unary<Request: Sendable, Response: Sendable>(
        request: ClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions = .defaults
    ) async throws -> Response {
        try await message(
            request: StreamingClientRequest(request), descriptor: descriptor, serializer: serializer,
            deserializer: deserializer, options: options.with { $0.rpcKind = .unary })
    }

    /// The single response message of a unary or client-streaming RPC, read on the call's own
    /// task (no handler of the caller's to run where the caller is).
    private func message<Request: Sendable, Response: Sendable>(
        request: StreamingClientRequest<Request>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
        options: CallOptions
    ) async throws -> Response {
        try enterRPC()
        defer { leaveRPC() }
        return try await executor.execute(
            request: request, descriptor: descriptor, serializer: serializer, deserializer: deserializer, options: options
        ) { response in
            try await ClientResponse(collecting: response).message
        }
    }
}

/// Runs a client for the duration of `handleClient`: connections run alongside, and the
/// client shuts down gracefully when `handleClient` returns or throws.
///
/// `handleClient` runs where the caller does: on the main actor, a SwiftUI view model may
/// set its own state inside it.
///
/// ```swift
/// @MainActor final class RaceList {
///     var races: [Race] = []
///     func load() async throws {
///         try await withGRPCClient(transport: try .http2(target: .dns(host: "localhost", port: 8080))) { client in
///             races = try await SwiftKartService.Client(wrapping: client).listRaces(.init()).races
///         }
///     }
/// }
/// ```
///
/// - Parameters:
///   - transport: the transport the client's RPCs run on.
///   - interceptors: applied to every RPC, the first outermost.
///   - observer: told of every RPC's attempts and end (`ClientMetrics` counts them).
///   - isolation: the caller's actor, inherited; leave it to its default.
///   - handleClient: what to do with the client.
/// - Returns: what `handleClient` returned.
public func withGRPCClient<Transport: ClientTransport, Result: Sendable>(
    transport: Transport, interceptors: [any ClientInterceptor] = [], observer: (any ClientCallObserver)? = nil,
    isolation: isolated (any Actor)? = #isolation,
    handleClient: (GRPCClient<Transport>) async throws -> Result
) async throws -> Result {
    let client = GRPCClient(transport: transport, interceptors: interceptors, observer: observer)
    return try await withThrowingTaskGroup(of: Void.self, isolation: isolation) { group in
        group.addTask { try await client.runConnections() }
        defer { client.beginGracefulShutdown() }
        return try await handleClient(client)
    }
}
