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

    /// Creates the context of an RPC, for calling a handler or interceptor directly, as tests do.
    ///
    /// - Parameters:
    ///   - descriptor: The method called.
    ///   - peer: The client's address.
    ///   - deadline: When the client gives up; nil (the default) for never.
    ///   - cancellation: The RPC's cancellation signal; a new, unraised one by default.
    ///   - messageCompression: The RPC's per-message compression control; a new one by default.
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
    /// Handles one RPC: calls `next` to pass the request on, changed or not, or returns or throws without calling it to
    /// answer the RPC itself (a thrown `RPCError` is the status the client sees).
    ///
    /// - Parameters:
    ///   - request: The request metadata and messages.
    ///   - context: What the server knows about the RPC.
    ///   - next: Passes the RPC to the next interceptor, or to the handler after the last.
    /// - Returns: The response the client (or the interceptor before this one) sees.
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
    /// false: by default an interceptor sees only the calls a handler serves.
    public var seesUnservedCalls: Bool { false }
}

/// A service a `GRPCServer` can serve: generated service protocols conform.
public protocol RegistrableRPCService: Sendable {
    /// Registers a handler for each of the service's methods in `router`; the server calls it once, when it is made.
    func registerMethods(with router: inout RPCRouter)
}
