import Synchronization

/// Told about every RPC a ``GRPCServer`` runs, for metrics: when it starts and how it ended.
/// Called on the RPC's own task; implementations must be cheap (atomic adds, no locks).
///
/// A server asks the observer once for each method it serves, when it is made, for a tag
/// (``tag(for:)``), and hands the tag back with every call of the method: an index into the
/// observer's own records per method, so that a call finds its counters with no lookup.
public protocol ServerCallObserver: Sendable {
    /// The tag of `method` (nil: every method the server does not serve), asked once when the
    /// server is made. The default is 0.
    func tag(for method: MethodDescriptor?) -> Int

    /// An RPC began.
    func callStarted(_ method: ObservedMethod)

    /// The RPC ended with `code` after `duration`, having received and sent messages of
    /// `receivedBytes` and `sentBytes` in all: as they crossed the wire (each message's length
    /// prefix, after compression) when the transport counts them (``MessageWireCounts``: HTTP/2
    /// and HTTP/1.1), else serialized (in process, where nothing is compressed).
    func callFinished(_ method: ObservedMethod, code: Status.Code, duration: Duration, receivedBytes: Int, sentBytes: Int)
}

extension ServerCallObserver {
    /// Returns 0 for every method.
    public func tag(for method: MethodDescriptor?) -> Int { 0 }

    /// `method` as calls of it are observed: with its tag.
    public func observed(_ method: MethodDescriptor?) -> ObservedMethod {
        ObservedMethod(descriptor: method, tag: tag(for: method))
    }
}

/// The method of an RPC as its server's observer sees it.
public struct ObservedMethod: Sendable, Equatable {
    /// The method; nil for one the server does not serve.
    public let descriptor: MethodDescriptor?
    /// What the observer's ``ServerCallObserver/tag(for:)`` returned for it.
    public let tag: Int

    /// Pairs a method (nil for one the server does not serve) with the tag its observer gave it.
    public init(descriptor: MethodDescriptor?, tag: Int) {
        self.descriptor = descriptor
        self.tag = tag
    }
}

/// One RPC as its server's observer sees it: its start, and the bytes of its messages counted
/// as they pass when the transport counts none on the wire. Made only when the server has an
/// observer, so that an unobserved RPC's task holds one optional reference for all of it.
@usableFromInline
final class ObservedCall: Sendable {
    let observer: any ServerCallObserver
    let method: ObservedMethod
    let wireCounts: (any MessageWireCounts)?
    /// When the RPC started, as an offset (see ``MonotonicEpoch``).
    let started: Duration
    private let received = Atomic<Int>(0)
    private let sent = Atomic<Int>(0)

    /// Starts the RPC: tells the observer.
    init(observer: any ServerCallObserver, method: ObservedMethod, wireCounts: (any MessageWireCounts)?) {
        self.observer = observer
        self.method = method
        self.wireCounts = wireCounts
        started = MonotonicEpoch.offset(of: .now)
        observer.callStarted(method)
    }

    /// The RPC's record when the server has an observer. Not inlined: its temporaries would
    /// take room in the executor's frame, which lives for the whole RPC.
    @usableFromInline @inline(never)
    static func start(
        observer: (any ServerCallObserver)?, method: ObservedMethod,
        wireCounts: (any MessageWireCounts)?
    ) -> ObservedCall? {
        observer.map { ObservedCall(observer: $0, method: method, wireCounts: wireCounts) }
    }

    @usableFromInline func received(_ bytes: Int) { received.add(bytes, ordering: .relaxed) }
    @usableFromInline func sent(_ bytes: Int) { sent.add(bytes, ordering: .relaxed) }

    /// Tells the observer how the RPC ended.
    func finished(_ code: Status.Code) {
        observer.callFinished(
            method, code: code, duration: MonotonicEpoch.offset(of: .now) - started,
            receivedBytes: wireCounts?.receivedMessageWireBytes ?? received.load(ordering: .relaxed),
            sentBytes: wireCounts?.sentMessageWireBytes ?? sent.load(ordering: .relaxed))
    }
}
