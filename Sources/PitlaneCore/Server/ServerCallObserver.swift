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

/// Bytes of messages an RPC received and sent, counted as they pass, when an observer wants them
/// and the transport counts none on the wire.
@usableFromInline
final class CallTally: Sendable {
    private let counts = Atomic<Int>(0)
    private let sent = Atomic<Int>(0)

    var receivedBytes: Int { counts.load(ordering: .relaxed) }
    var sentBytes: Int { sent.load(ordering: .relaxed) }

    @usableFromInline func received(_ bytes: Int) { counts.add(bytes, ordering: .relaxed) }
    @usableFromInline func sent(_ bytes: Int) { sent.add(bytes, ordering: .relaxed) }
}
