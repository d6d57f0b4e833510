import Synchronization

/// A one-shot cancellation signal that one side raises and another waits for; transports
/// use it to cancel a handler's task when its RPC is cancelled from afar.
public final class RPCCancellationHandle: Sendable {
    private struct State {
        var isCancelled = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    public init() {}

    public var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Raises the signal; later calls do nothing.
    public func cancel() {
        let waiters = state.withLock { state in
            state.isCancelled = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
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

    /// Runs `body`, cancelling its task if the signal is raised before it returns.
    public func run(_ body: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await body() }
            group.addTask { await self.wait() }
            await group.next()
            group.cancelAll()
        }
    }
}
