import PitlaneCore
import Synchronization

/// Work for the server's task group: an RPC, or other work a connection runs as a server
/// task (a WebSocket connection's handler).
enum AcceptedWork: Sendable {
    case rpc(loop: EventLoop, stream: ServerRPCStream, context: ServerTransportContext, cancellation: RPCCancellationHandle)
    case task(loop: EventLoop, work: @Sendable () async -> Void)
}

/// Accepted work on its way from the event loops, which never wait, to the one loop in
/// `listen` that starts a task for each. Not generic, so handing over an RPC costs no type
/// metadata lookups (an `AsyncStream` did, and a lock and allocations of its own). Its length
/// is bounded by the streams the open connections may have: each element becomes a task as
/// soon as it is taken.
final class AcceptedWorkQueue: Sendable {
    private struct State {
        var queue = Deque<AcceptedWork>()
        var reader: UnsafeContinuation<AcceptedWork?, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    /// Hands `work` over; false once the queue has finished (the work is not taken).
    func offer(_ work: AcceptedWork) -> Bool {
        let (taken, reader) = state.withLock { state -> (Bool, UnsafeContinuation<AcceptedWork?, Never>?) in
            guard !state.finished else { return (false, nil) }
            if let reader = state.reader {
                state.reader = nil
                return (true, reader)
            }
            state.queue.append(work)
            return (true, nil)
        }
        reader?.resume(returning: work)
        return taken
    }

    /// Takes no more work; what was offered before is still read.
    func finish() {
        let reader = state.withLock { state in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    /// The next work, waiting for it; nil once finished and drained, or when the reading task
    /// is cancelled (which finishes the queue). One reader at a time.
    func next() async -> AcceptedWork? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                let ready = state.withLock { state -> AcceptedWork?? in
                    if let work = state.queue.popFirst() { return .some(work) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.reader = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }
}

/// The tasks a listening transport runs, one per RPC (and per WebSocket connection): started
/// unstructured, tracked here so that `listen` returns once every one has, and cancelled with
/// it.
///
/// Why not children of one task group: Swift's task group unlinks a finished child by walking
/// its list of children from the newest, so the end of a long-lived stream cost a walk over
/// every stream opened after it, and many ending together (a client, a load balancer dropping
/// its connections) cost time quadratic in the open streams: 40,000 race followers
/// disconnecting took 1.7 s of a core in that walk alone. Here a task's end is a dictionary
/// removal. (An unstructured task copies the task-local values bound where `listen` runs, one
/// allocation each, where a child shared them; a server's main binds none.)
final class RunningTasks: Sendable {
    private struct State {
        var tasks: [UInt64: Task<Void, Never>] = [:]
        /// Tasks that ended before their handle was stored (a short one, on another thread).
        var endedEarly: Set<UInt64> = []
        var nextID: UInt64 = 0
        var running = 0
        var cancelled = false
        var idle: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// A task is about to start: its id, for ``started(_:id:)`` and ``ended(_:)``. (The caller
    /// makes the task, so that its one closure holds what the task needs and this id.)
    func starting() -> UInt64 {
        state.withLock { state in
            state.nextID &+= 1
            state.running += 1
            return state.nextID
        }
    }

    /// The task `id` started; it is cancelled at once after ``cancelAll()``.
    func started(_ task: Task<Void, Never>, id: UInt64) {
        let cancelNow = state.withLock { state in
            if state.endedEarly.remove(id) == nil { state.tasks[id] = task }
            return state.cancelled
        }
        if cancelNow { task.cancel() }
    }

    /// The task `id` ended: its last call.
    func ended(_ id: UInt64) {
        let idle = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.tasks.removeValue(forKey: id) == nil { state.endedEarly.insert(id) }
            state.running -= 1
            guard state.running == 0 else { return nil }
            defer { state.idle = nil }
            return state.idle
        }
        idle?.resume()
    }

    /// Cancels every task, and every task started from now on.
    func cancelAll() {
        let tasks = state.withLock { state in
            state.cancelled = true
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
    }

    /// Returns once no task runs.
    func waitForAll() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.running == 0 { return true }
                state.idle = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}
