import Synchronization

/// Told about every RPC a ``GRPCServer`` runs, for metrics: when it starts and how it ended.
/// Called on the RPC's own task; implementations must be cheap (atomic adds, no locks).
public protocol ServerCallObserver: Sendable {
    /// An RPC began. `method` is nil for one the server does not serve.
    func callStarted(_ method: MethodDescriptor?)

    /// The RPC ended with `code` after `duration`, having received and sent messages of
    /// `receivedBytes` and `sentBytes` in all: as they crossed the wire (each message's length
    /// prefix, after compression) when the transport counts them (``MessageWireCounts``: HTTP/2
    /// and HTTP/1.1), else serialized (in process, where nothing is compressed).
    func callFinished(_ method: MethodDescriptor?, code: Status.Code, duration: Duration, receivedBytes: Int, sentBytes: Int)
}

/// One RPC as its server's observer sees it: its start, and the bytes of its messages counted
/// as they pass when the transport counts none on the wire. Made only when the server has an
/// observer, so that an unobserved RPC's task holds one optional reference for all of it.
@usableFromInline
final class ObservedCall: Sendable {
    let observer: any ServerCallObserver
    let method: MethodDescriptor?
    let wireCounts: (any MessageWireCounts)?
    /// When the RPC started, as an offset (see ``MonotonicEpoch``).
    let started: Duration
    private let received = Atomic<Int>(0)
    private let sent = Atomic<Int>(0)

    /// Starts the RPC: tells the observer.
    init(observer: any ServerCallObserver, method: MethodDescriptor?, wireCounts: (any MessageWireCounts)?) {
        self.observer = observer
        self.method = method
        self.wireCounts = wireCounts
        started = MonotonicEpoch.offset(of: .now)
        observer.callStarted(method)
    }

    /// The RPC's record when the server has an observer. Not inlined: its temporaries would
    /// take room in the executor's frame, which lives for the whole RPC.
    @usableFromInline @inline(never)
    static func start(observer: (any ServerCallObserver)?, method: MethodDescriptor?,
                      wireCounts: (any MessageWireCounts)?) -> ObservedCall? {
        observer.map { ObservedCall(observer: $0, method: method, wireCounts: wireCounts) }
    }

    @usableFromInline func received(_ bytes: Int) { received.add(bytes, ordering: .relaxed) }
    @usableFromInline func sent(_ bytes: Int) { sent.add(bytes, ordering: .relaxed) }

    /// Tells the observer how the RPC ended.
    func finished(_ code: Status.Code) {
        observer.callFinished(method, code: code, duration: MonotonicEpoch.offset(of: .now) - started,
                              receivedBytes: wireCounts?.receivedMessageWireBytes ?? received.load(ordering: .relaxed),
                              sentBytes: wireCounts?.sentMessageWireBytes ?? sent.load(ordering: .relaxed))
    }
}
