/// What a handler knows about its RPC.
public struct ServerContext: Sendable {
    /// The method called.
    public var descriptor: MethodDescriptor
    /// The client's address, as the transport names it (`ipv4:127.0.0.1:52000`, `in-process`).
    public var peer: String
    /// When the client gives up, if it set a timeout; the handler is cancelled then.
    public var deadline: ContinuousClock.Instant? {
        get { deadlineAfterEpoch.map(MonotonicEpoch.instant(at:)) }
        set { deadlineAfterEpoch = newValue.map(MonotonicEpoch.offset(of:)) }
    }
    /// `deadline`, kept as an offset (see ``MonotonicEpoch``).
    private var deadlineAfterEpoch: Duration?
    /// Raised when the RPC is cancelled: by the client, a lost connection, or the deadline.
    /// The handler's task is cancelled at the same moment.
    public var cancellation: RPCCancellationHandle
    /// Whether the request message read last arrived compressed, and whether the responses
    /// written next are compressed (when the transport compresses this RPC's responses).
    public var messageCompression: MessageCompressionControl

    public init(
        descriptor: MethodDescriptor, peer: String, deadline: ContinuousClock.Instant? = nil,
        cancellation: RPCCancellationHandle = RPCCancellationHandle(),
        messageCompression: MessageCompressionControl = MessageCompressionControl()
    ) {
        self.descriptor = descriptor
        self.peer = peer
        deadlineAfterEpoch = deadline.map(MonotonicEpoch.offset(of:))
        self.cancellation = cancellation
        self.messageCompression = messageCompression
    }

    /// The context of an RPC the transport accepted: its deadline carried over as it is kept.
    @usableFromInline
    init(descriptor: MethodDescriptor, transportContext: ServerTransportContext) {
        self.descriptor = descriptor
        peer = transportContext.peer
        deadlineAfterEpoch = transportContext.deadlineAfterEpoch
        cancellation = transportContext.cancellation
        messageCompression = MessageCompressionControl()
    }
}

/// Sees every RPC a server handles, in order of registration (the first is outermost), and
/// may read or change metadata, reject the call, or wrap its streams.
public protocol ServerInterceptor: Sendable {
    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output>

    /// Whether the server also runs this interceptor for the calls no handler serves, which it
    /// answers UNIMPLEMENTED itself: a method it does not know (`context.descriptor` is the
    /// requested path; the messages are bytes, never read), or one it cannot serve in the
    /// request's codec or over GET. Default false: an interceptor that authenticates or
    /// rewrites calls sees only those a handler serves (else a call to a method that does not
    /// exist could fail UNAUTHENTICATED). The shipped logging, access-log and tracing
    /// interceptors say true, so every call is logged and traced.
    var seesUnservedCalls: Bool { get }
}

extension ServerInterceptor {
    public var seesUnservedCalls: Bool { false }
}

/// A service a `GRPCServer` can serve: generated service protocols conform.
public protocol RegistrableRPCService: Sendable {
    func registerMethods(with router: inout RPCRouter)
}
