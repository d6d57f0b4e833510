/// Told about every RPC a ``GRPCClient`` makes and every attempt of it on the wire, for metrics
/// (gRFC A66): a call has one attempt, or more when a retry or hedging policy tries again.
///
/// The client asks ``methodObserver(for:)`` once per call, so whatever the observer looks up
/// per method (its counters, say) it looks up once; the call's events then go to what it
/// returned. Events come on the RPC's tasks: implementations must be cheap (atomic adds, no
/// locks).
///
/// ```swift
/// let metrics = ClientMetrics(target: transport.target, methods: SwiftKartService.Method.descriptors)
/// try await withGRPCClient(transport: transport, observer: metrics) { client in … }
/// ```
public protocol ClientCallObserver: Sendable {
    /// Where the events of one call of `method`, and of its attempts, go.
    func methodObserver(for method: MethodDescriptor) -> any ClientMethodObserver
}

/// The events of one call and its attempts, as a ``ClientCallObserver`` hands them on.
public protocol ClientMethodObserver: Sendable {
    /// An attempt began: the client asks its transport for a stream.
    func attemptStarted()

    /// An attempt ended with `code` after `duration`, having sent and received messages of
    /// `sentBytes` and `receivedBytes` in all: as they crossed the wire (each message's length
    /// prefix, after compression) when the transport counts them (``MessageWireCounts``), else
    /// serialized (in process, where nothing is compressed).
    /// An attempt that a retry replaced ends with the status that made the client retry; one
    /// that lost to a hedged attempt, or whose call was given up, with `.cancelled` (or
    /// `.deadlineExceeded` when the call's deadline passed).
    func attemptFinished(code: Status.Code, duration: Duration, sentBytes: Int, receivedBytes: Int)

    /// The call ended with `code`, the status its caller sees, `duration` after it began.
    func callFinished(code: Status.Code, duration: Duration)
}
