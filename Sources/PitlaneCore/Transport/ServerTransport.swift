/// The seam between the gRPC server and a way of accepting RPCs (HTTP/2, in-process).
public protocol ServerTransport: Sendable {
    /// Accepts streams and calls `streamHandler` for each, concurrently, until
    /// `beginGracefulShutdown()` and the last handler returns. The transport cancels a
    /// handler's task when its RPC is cancelled (by the client, or a lost connection).
    func listen(
        streamHandler: @escaping @Sendable (_ stream: ServerRPCStream, _ context: ServerTransportContext) async -> Void
    ) async throws

    /// Stops accepting streams; open ones run to their end.
    func beginGracefulShutdown()
}

/// What a transport knows about an accepted RPC.
public struct ServerTransportContext: Sendable {
    /// The client's address, such as `ipv4:127.0.0.1:51234` or `in-process`.
    public var peer: String
    /// When the client gives up (from `grpc-timeout`), if it said. The transport enforces it:
    /// at the deadline it calls the RPC's ``RPCCancellationHandle/expireDeadline()``, and it
    /// disarms that timer when the RPC ends.
    public var deadline: ContinuousClock.Instant? {
        get { deadlineAfterEpoch.map(MonotonicEpoch.instant(at:)) }
        set { deadlineAfterEpoch = newValue.map(MonotonicEpoch.offset(of:)) }
    }
    /// `deadline`, kept as an offset (see ``MonotonicEpoch``).
    private(set) var deadlineAfterEpoch: Duration?
    /// The RPC's cancellation signal, which the transport raises when the client cancels,
    /// the connection is lost or the deadline passes; it becomes the handler's
    /// ``ServerContext/cancellation``.
    public var cancellation: RPCCancellationHandle
    /// How the request's messages are written, and the response's must be, as the request's
    /// content type chose: the binary format, or JSON (Connect's `json`, gRPC's
    /// `application/grpc+json`). The router picks the method's handler for it.
    public var codec: MessageCodec
    /// The request arrived in a form that must not change anything: an HTTP GET (Connect's
    /// cacheable unary calls), or any request a transport cannot protect from replay (TLS
    /// early data). Only a method whose ``IdempotencyLevel`` is `.noSideEffects` serves it.
    public var requiresNoSideEffects: Bool

    /// Creates the context of an accepted RPC; only the peer is required.
    ///
    /// - Parameters:
    ///   - peer: The client's address, such as `ipv4:127.0.0.1:51234`.
    ///   - deadline: When the client gives up; nil (the default) for never.
    ///   - cancellation: The RPC's cancellation signal, which the transport raises; a new one by default.
    ///   - codec: How the request's messages are written; binary by default.
    ///   - requiresNoSideEffects: Whether only a `.noSideEffects` method may serve the request; false by default.
    public init(
        peer: String, deadline: ContinuousClock.Instant? = nil, cancellation: RPCCancellationHandle = RPCCancellationHandle(),
        codec: MessageCodec = .protobuf, requiresNoSideEffects: Bool = false
    ) {
        self.peer = peer
        deadlineAfterEpoch = deadline.map(MonotonicEpoch.offset(of:))
        self.cancellation = cancellation
        self.codec = codec
        self.requiresNoSideEffects = requiresNoSideEffects
    }
}
