/// The seam between the gRPC client and a way of reaching a server (HTTP/2, in-process).
public protocol ClientTransport: Sendable {
    /// Maintains connections until `beginGracefulShutdown()` and the last stream ends.
    func connect() async throws

    /// Stops opening streams; open ones run to their end, then `connect()` returns.
    func beginGracefulShutdown()

    /// Opens a stream for one attempt of an RPC and runs `body` with it; the stream is
    /// closed when `body` returns. Fails with `.unavailable` when no stream can be opened.
    /// `body` runs where the caller does (`nonisolated(nonsending)`).
    nonisolated(nonsending) func withStream<T: Sendable>(
        descriptor: MethodDescriptor, options: CallOptions,
        _ body: (ClientRPCStream) async throws -> T
    ) async throws -> T

    /// The service config's entry for a method, if the transport has a service config.
    func config(forMethod descriptor: MethodDescriptor) -> MethodConfig?

    /// The time the client's deadlines, retry backoff and hedging delays run on.
    var timeSource: TimeSource { get }

    /// How the transport writes messages; generated clients serialize to match.
    var messageCodec: MessageCodec { get }

    /// Where an RPC's own tasks should run (its request producer, its response handler, the
    /// bookkeeping of its attempts): the thread that does the stream's I/O, say, so that
    /// messages reach them without a hop between threads. Nil: wherever the caller runs.
    var callExecutor: (any TaskExecutor)? { get }
}

extension ClientTransport {
    /// Returns nil: a transport without a service config leaves every method to its call options.
    public func config(forMethod descriptor: MethodDescriptor) -> MethodConfig? { nil }

    /// The continuous clock, `.continuous`.
    public var timeSource: TimeSource { .continuous }

    /// The Protocol Buffers binary format, `.protobuf`.
    public var messageCodec: MessageCodec { .protobuf }

    /// nil: an RPC's tasks run wherever the caller runs.
    public var callExecutor: (any TaskExecutor)? { nil }
}
