import Synchronization

/// A one-shot cancellation signal that one side raises and another waits for; transports
/// use it to cancel a handler's task when its RPC is cancelled from afar.
public final class RPCCancellationHandle: Sendable {
    private struct State {
        var isCancelled = false
        var deadlineExceeded = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        /// Told when the signal is raised; see ``observe(_:)``.
        var observer: (any RPCCancellationObserver)?
    }

    private let state = Mutex(State())
    /// The task `run` is running, while it runs: `cancel()` cancels it. Guarded by its own lock
    /// because cancelling a task runs its cancellation handlers, and those may `wait()` here.
    private let runningTask = Mutex<RunningTask?>(nil)

    /// `run`'s task. Only used under `runningTask`'s lock, while `run` is inside `body`.
    private struct RunningTask: @unchecked Sendable {
        let task: UnsafeCurrentTask
    }

    /// Creates a signal that has not been raised.
    public init() {}

    /// Whether the signal has been raised, by ``cancel()`` or ``expireDeadline()``.
    public var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Whether the cancellation came from the RPC's deadline (``expireDeadline()``).
    public var isDeadlineExceeded: Bool { state.withLock { $0.deadlineExceeded } }

    /// The RPC's deadline passed: like ``cancel()``, and the RPC ends with
    /// `.deadlineExceeded` rather than `.cancelled`. Transports call it from the timer they
    /// arm for `ServerTransportContext.deadline`; ignored once the signal is raised.
    public func expireDeadline() {
        let first = state.withLock { state in
            guard !state.isCancelled else { return false }
            state.deadlineExceeded = true
            return true
        }
        if first { cancel() }
    }

    /// Raises the signal and cancels the task inside `run`, if any; later calls do nothing more.
    public func cancel() {
        raise()
        runningTask.withLock { $0?.task.cancel() }
    }

    /// Raises the signal without cancelling `run`'s task: the RPC is over, and waiters may go.
    package func raise() {
        let (waiters, observer) = state.withLock { state in
            state.isCancelled = true
            defer {
                state.waiters = [:]
                state.observer = nil
            }
            return (Array(state.waiters.values), state.observer)
        }
        for waiter in waiters { waiter.resume() }
        observer?.rpcCancellationRaised()
    }

    /// Tells `observer` once the signal is raised (at once if it is): for an RPC whose
    /// response goes on with no task to cancel (``RPCWriter/deliver(from:ended:)``). One
    /// observer per RPC.
    func observe(_ observer: some RPCCancellationObserver) {
        let now = state.withLock { state in
            if state.isCancelled { return true }
            state.observer = observer
            return false
        }
        if now { observer.rpcCancellationRaised() }
    }

    /// Returns once the signal is raised, or the waiting task is cancelled.
    public func wait() async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.isCancelled || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Runs `body` in the calling task, which `cancel()` cancels until `body` returns. No task
    /// is created: an RPC costs one task, not three.
    nonisolated(nonsending) public func run(_ body: nonisolated(nonsending) () async -> Void) async {
        await runReturning(body)
    }

    /// ``run(_:)`` for a body with a result.
    nonisolated(nonsending) package func runReturning<T>(_ body: nonisolated(nonsending) () async -> T) async -> T {
        enter()
        let result = await body()
        leave()
        return result
    }

    /// ``run(_:)`` as two steps for a caller that cannot afford the closure: from `enter()`
    /// to `leave()`, in the same task, `cancel()` cancels the calling task. A transport's
    /// per-RPC task uses it so that no closure context and frame of `run` sit under the
    /// handler for the whole RPC (they are most of what an idle stream costs).
    package func enter() {
        withUnsafeCurrentTask { task in
            let running = task.map(RunningTask.init)
            runningTask.withLock { $0 = running }
        }
        if isCancelled { withUnsafeCurrentTask { $0?.cancel() } }
    }

    /// Ends what ``enter()`` began. Cleared under the lock before the task can end, so
    /// `cancel()` never sees a stale task.
    package func leave() {
        runningTask.withLock { $0 = nil }
    }
}

/// What an RPC with no task left is, to its cancellation handle: told when the RPC is
/// cancelled, its deadline passes, or it ends.
protocol RPCCancellationObserver: AnyObject, Sendable {
    func rpcCancellationRaised()
}
