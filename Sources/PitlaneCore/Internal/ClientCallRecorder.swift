import Synchronization

/// One RPC's measurements for a ``ClientCallObserver``: when the call began, whether it has
/// ended, and whether its deadline passed (attempts cut by it then end with
/// `.deadlineExceeded`, not `.cancelled`). Made only for a client with an observer; atomics,
/// no lock.
final class ClientCallRecorder: Sendable {
    private let observer: any ClientMethodObserver
    private let timeSource: TimeSource
    private let start: ContinuousClock.Instant
    private let ended = Atomic(false)
    private let deadlinePassed = Atomic(false)

    init(observer: any ClientCallObserver, method: MethodDescriptor, timeSource: TimeSource) {
        self.observer = observer.methodObserver(for: method)
        self.timeSource = timeSource
        start = timeSource.now
    }

    /// A new attempt, counted as started now; its recorder comes once its stream does.
    func startAttempt() -> StartedAttempt {
        observer.attemptStarted()
        return StartedAttempt(call: self, start: timeSource.now)
    }

    /// The call's deadline passed. The deadline's timer says so before it cancels the call, so
    /// the attempts that cancellation ends know why.
    func expireDeadline() {
        deadlinePassed.store(true, ordering: .sequentiallyConsistent)
    }

    /// How an attempt ends that no status ended: given up by its call.
    var abandonedCode: Status.Code {
        deadlinePassed.load(ordering: .sequentiallyConsistent) ? .deadlineExceeded : .cancelled
    }

    /// The call ended with `code`; later calls do nothing.
    func finish(_ code: Status.Code) {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        observer.callFinished(code: code, duration: timeSource.now - start)
    }

    fileprivate func attemptFinished(_ code: Status.Code, start: ContinuousClock.Instant, sentBytes: Int, receivedBytes: Int) {
        observer.attemptFinished(code: code, duration: timeSource.now - start, sentBytes: sentBytes, receivedBytes: receivedBytes)
    }
}

/// An attempt counted as started, waiting for its stream: its recorder reads the stream's
/// ``MessageWireCounts`` when it ends, so it is made once the stream is known (or known to fail).
struct StartedAttempt: Sendable {
    let call: ClientCallRecorder
    let start: ContinuousClock.Instant

    /// The attempt's recorder; `wireCounts` are its stream's, nil when it has none.
    func recorder(wireCounts: (any MessageWireCounts)?) -> ClientAttemptRecorder {
        ClientAttemptRecorder(call: call, start: start, wireCounts: wireCounts)
    }
}

/// One attempt's measurements: message bytes each way, and how it ended. The bytes are the
/// stream's as the transport framed them (``MessageWireCounts``, after compression) when it
/// counts them, else the serialized sizes the client recorded. It ends once, with
/// the first status recorded: the server's, the failure the client read in its place, or
/// (when its call gives it up) the call's ``ClientCallRecorder/abandonedCode``. The attempt
/// whose response the caller gets is committed: its end is the call's end.
final class ClientAttemptRecorder: Sendable {
    private let call: ClientCallRecorder
    private let start: ContinuousClock.Instant
    /// The transport's counts of the stream's bytes on the wire, when it keeps them.
    private let wireCounts: (any MessageWireCounts)?
    private let sentBytes = Atomic<Int>(0)
    private let receivedBytes = Atomic<Int>(0)
    /// -1 while the attempt runs, then the raw value of the code it ended with.
    private let outcome = Atomic<Int>(-1)
    private let isCommitted = Atomic(false)

    fileprivate init(call: ClientCallRecorder, start: ContinuousClock.Instant, wireCounts: (any MessageWireCounts)?) {
        self.call = call
        self.start = start
        self.wireCounts = wireCounts
    }

    /// A request message of `bytes` serialized; counted only when the transport counts none.
    func recordSent(_ bytes: Int) {
        if wireCounts == nil { sentBytes.add(bytes, ordering: .relaxed) }
    }

    /// A response message of `bytes` serialized; counted only when the transport counts none.
    func recordReceived(_ bytes: Int) {
        if wireCounts == nil { receivedBytes.add(bytes, ordering: .relaxed) }
    }

    /// The attempt's status is known; only the first one counts.
    func finish(_ code: Status.Code) {
        guard outcome.compareExchange(expected: -1, desired: code.rawValue, ordering: .sequentiallyConsistent).exchanged else { return }
        call.attemptFinished(
            code, start: start,
            sentBytes: wireCounts?.sentMessageWireBytes ?? sentBytes.load(ordering: .relaxed),
            receivedBytes: wireCounts?.receivedMessageWireBytes ?? receivedBytes.load(ordering: .relaxed))
        // Sequentially consistent with `commit()`: of the two, at least one sees the other.
        if isCommitted.load(ordering: .sequentiallyConsistent) { call.finish(code) }
    }

    /// The attempt failed with `error`. While the task is being cancelled the error is the
    /// cancellation's doing, and the attempt ends as given up (by a deadline, or its caller).
    func fail(_ error: any Error) {
        finish(Task.isCancelled ? call.abandonedCode : RPCError.from(error).code.status)
    }

    /// The attempt's stream is being closed: unless a status ended it, it was given up.
    func abandon() {
        finish(call.abandonedCode)
    }

    /// The caller gets this attempt's response: the attempt's end is the call's.
    func commit() {
        isCommitted.store(true, ordering: .sequentiallyConsistent)
        let code = outcome.load(ordering: .sequentiallyConsistent)
        if code >= 0, let status = Status.Code(rawValue: code) { call.finish(status) }
    }
}
