import Glibc
import Synchronization

/// Work queued on a loop: a closure, or a Swift task's job, queued as it is (a closure around
/// it would be an allocation for every hop of every task that runs on the loop).
///
/// `@unchecked Sendable`: a closure is either `Sendable` (``EventLoop/execute(_:)`` demands
/// it) or queued by the loop for itself (``EventLoop/executeLater(_:)``, which asserts that)
/// and run on the same thread. One case for both: a closure that only lost its `@Sendable`
/// costs nothing, where wrapping one costs an allocation per hop.
enum LoopTask: @unchecked Sendable {
    case closure(() -> Void)
    /// A closure, then its counter told (``EventLoop/execute(_:counting:)``).
    case counted(() -> Void, any LoopTaskCounter)
    case job(UnownedJob)
}

/// The loop's only door for other threads: a lock-protected task queue, the loop's lifecycle,
/// and an eventfd that wakes `epoll_wait` when work arrives.
final class Inbox: Sendable {
    enum Lifecycle {
        case running
        /// Still accepts tasks: running ones, and the handlers being closed, may add more.
        case shuttingDown
        case shutDown
    }

    private struct State {
        var tasks: [LoopTask] = []
        var lifecycle = Lifecycle.running
        /// An eventfd write is outstanding, so further tasks need not write again until the
        /// loop has taken the queue.
        var wakePending = false
    }

    /// Registered with the loop's epoll set for reading.
    let eventFD: Int32
    private let state = Mutex(State())

    init() throws(EventLoopError) {
        eventFD = Linux.eventFD()
        guard eventFD >= 0 else { throw .system("eventfd", errno: errno) }
    }

    deinit {
        Glibc.close(eventFD)
    }

    /// Queues `task`; false (and the task is dropped) once the loop has shut down.
    /// `fromLoop`: the loop's own thread is queueing, so no wake-up is needed — the loop checks
    /// `hasTasks` before it waits.
    func enqueue(_ task: LoopTask, fromLoop: Bool = false) -> Bool {
        let (accepted, mustWake) = state.withLock { state -> (Bool, Bool) in
            guard case .shutDown = state.lifecycle else {
                state.tasks.append(task)
                if fromLoop { return (true, false) }
                defer { state.wakePending = true }
                return (true, !state.wakePending)
            }
            return (false, false)
        }
        if mustWake { wake() }
        return accepted
    }

    /// Whether tasks are queued: the loop then polls instead of waiting.
    var hasTasks: Bool { state.withLock { !$0.tasks.isEmpty } }

    /// Moves a running loop to shutting down; false if it was already shutting down or done.
    func beginShutdown() -> Bool {
        let (started, mustWake) = state.withLock { state -> (Bool, Bool) in
            guard case .running = state.lifecycle else { return (false, false) }
            state.lifecycle = .shuttingDown
            defer { state.wakePending = true }
            return (true, !state.wakePending)
        }
        if mustWake { wake() }
        return started
    }

    /// Moves every queued task, oldest first, into `batch`, which must be empty: the two
    /// arrays trade places, so each keeps its capacity and a steady loop allocates nothing
    /// to queue work. Returns whether the loop is shutting down. Call after
    /// `consumeWakeUp()`, so that a wake-up written after this call is never the one consumed.
    func takeAll(into batch: inout [LoopTask]) -> Bool {
        state.withLock { state in
            state.wakePending = false
            swap(&state.tasks, &batch)
            if case .running = state.lifecycle { return false }
            return true
        }
    }

    /// Ends a shutdown if no task is queued; from then on `enqueue` refuses work.
    func finishShutdownIfIdle() -> Bool {
        state.withLock { state in
            guard state.tasks.isEmpty else { return false }
            state.lifecycle = .shutDown
            return true
        }
    }

    /// Resets the eventfd counter after the loop saw it readable.
    func consumeWakeUp() {
        var counter: UInt64 = 0
        // EAGAIN means another iteration already consumed it; nothing else can fail here.
        while Glibc.read(eventFD, &counter, 8) < 0 && errno == EINTR {}
    }

    private func wake() {
        var one: UInt64 = 1
        // The counter cannot overflow: at most one write is outstanding (`wakePending`).
        while Glibc.write(eventFD, &one, 8) < 0 && errno == EINTR {}
    }
}
