import Glibc
import PitlaneCore
import Synchronization

/// One thread waiting in `epoll_wait` and running everything attached to it: file descriptor
/// handlers, timers and tasks submitted from other threads.
///
/// A connection lives on exactly one loop and is touched only on its thread, so connection
/// state needs no locks. Other threads reach a loop only through ``execute(_:)`` and
/// ``submit(_:)``; descriptor registration and timers are for code already on the loop.
///
/// ```swift
/// let loop = try EventLoop.start(name: "io")
/// let address = try await loop.submit {
///     let listener = try Socket.listen(on: .ipv4("127.0.0.1", port: 0))
///     let acceptor = Acceptor(loop, listener)
///     try loop.register(listener.fileDescriptor, handler: acceptor, readable: true, writable: false)
///     return try listener.localAddress
/// }
/// // … connect to `address` …
/// loop.shutdownGracefully()
/// ```
///
/// Each iteration waits for events (the wait's timeout is the earliest timer deadline), calls
/// handlers for the events, fires due timers, then runs the tasks queued so far, and in a few
/// more rounds those that they queue. The loop blocks nowhere but in `epoll_wait`. A loop must be shut down with
/// ``shutdownGracefully()``: its thread keeps it alive until then.
public final class EventLoop: Sendable {
    /// The name given at start, also the thread's name.
    public let name: String
    /// The time the loop's timers run on.
    public let timeSource: TimeSource

    let epollFD: Int32
    let inbox: Inbox
    let state = LoopState()
    /// `pthread_self()` of the loop thread while it runs, else 0.
    private let loopThreadID = Atomic<UInt>(0)
    private let thread = Mutex<PosixThread?>(nil)

    /// Starts a loop on a new thread named `name`, its timers on `timeSource` (real time by
    /// default; on a `ManualClock` they fire as the clock is advanced).
    ///
    /// `idlePollLimit`: the longest a loop that ran out of work polls for more before it
    /// sleeps (see `IdlePolling`; the window adapts to the traffic, and closes while it is
    /// sparse). Zero, the default, sleeps at once.
    public static func start(
        name: String = "pitlane-loop", timeSource: TimeSource = .continuous, idlePollLimit: Duration = .zero
    ) throws(EventLoopError) -> EventLoop {
        let loop = try EventLoop(name: name, timeSource: timeSource)
        loop.state.idlePolling = IdlePolling(limit: idlePollLimit)
        let thread = try PosixThread.spawn(name: name) { loop.run() }
        loop.thread.withLock { $0 = thread }
        return loop
    }

    private init(name: String, timeSource: TimeSource) throws(EventLoopError) {
        let inbox = try Inbox()
        // Both descriptors are kept in locals until nothing can fail: `deinit` (which closes
        // `epollFD`) only runs for a fully initialized loop.
        let epollFD = Linux.epollCreate()
        guard epollFD >= 0 else { throw .system("epoll_create1", errno: errno) }
        let key = LoopState.Registration.key(fd: inbox.eventFD, generation: 0)
        guard Linux.epollControl(epollFD, .add, inbox.eventFD, events: Linux.epollIn, data: key) == 0 else {
            let error = errno
            Glibc.close(epollFD)
            throw .system("epoll_ctl", errno: error)
        }
        self.name = name
        self.timeSource = timeSource
        self.inbox = inbox
        self.epollFD = epollFD
    }

    deinit {
        Glibc.close(epollFD)
    }

    /// Whether the caller runs on this loop's thread.
    public var inEventLoop: Bool {
        loopThreadID.load(ordering: .relaxed) == PosixThread.currentID
    }

    /// Stops the program unless called on this loop's thread.
    public func preconditionInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inEventLoop, "must be called on event loop \(name)", file: file, line: line)
    }

    /// Runs `task` on the loop's thread. Safe from any thread, the loop's own included.
    ///
    /// Tasks run in the order they were queued, after the current batch of events and timers.
    /// Once the loop has shut down, `task` is dropped; use ``submit(_:)`` to learn of that.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        _ = inbox.enqueue(.closure(task), fromLoop: inEventLoop)
    }

    /// ``execute(_:)``, then tells `counter` that the task ran: for a writer that keeps count
    /// of its parts on their way to the loop (to keep them in order with parts it hands over
    /// directly), without a closure around `task` to do the counting.
    public func execute(_ task: @escaping @Sendable () -> Void, counting counter: any LoopTaskCounter) {
        _ = inbox.enqueue(.counted(task, counter), fromLoop: inEventLoop)
    }

    /// Runs `task` on the loop's thread after the tasks queued so far; called on that thread
    /// only, which debug builds check. `task` need not be `Sendable`: it may hold loop-owned
    /// state (a connection hopping to itself, to flush once a batch of writes is queued),
    /// since it runs on the thread that made it.
    public func executeLater(_ task: @escaping () -> Void) {
        assertInEventLoop()
        _ = inbox.enqueue(.closure(task), fromLoop: true)
    }

    /// Shuts the loop down and returns once its thread has ended. Safe from any thread but the
    /// loop's own; later and concurrent calls wait for the same end.
    ///
    /// The loop first runs the tasks already queued, then deregisters every descriptor and
    /// calls its handler's ``FileDescriptorHandler/close()``, runs any tasks those queued,
    /// and stops. Timers that have not fired are dropped without running, and tasks queued
    /// after that point are refused.
    public func shutdownGracefully() {
        precondition(!inEventLoop, "shutting event loop \(name) down from its own thread would deadlock")
        _ = inbox.beginShutdown()
        // Holding the lock while joining makes concurrent callers wait for the same join.
        // The loop thread never takes this lock, so this cannot deadlock.
        thread.withLock { thread in
            thread?.join()
            thread = nil
        }
    }

    private func run() {
        loopThreadID.store(PosixThread.currentID, ordering: .relaxed)
        // Thread ids are reused after a thread ends; a later thread must not look like ours.
        defer { loopThreadID.store(0, ordering: .relaxed) }
        let events = EpollEventBuffer(capacity: 256)
        while true {
            let count = waitForEvents(events)
            dispatch(events, count: count)
            fireDueTimers()
            if runQueuedTasks() == .finished { return }
        }
    }

    private func waitForEvents(_ events: borrowing EpollEventBuffer) -> Int {
        // Tasks the loop queued for itself wrote no wake-up: poll, do not sleep.
        if inbox.hasTasks { return wait(for: events, timeoutMilliseconds: 0) }
        guard state.idlePolling.isEnabled else {
            return wait(for: events, timeoutMilliseconds: timerTimeoutMilliseconds())
        }
        let timerTimeout = timerTimeoutMilliseconds()
        if timerTimeout == 0 { return wait(for: events, timeoutMilliseconds: 0) }
        let idleSince = IdlePolling.now()
        var window = state.idlePolling.windowNanoseconds
        // Polling stops short of the next timer, whose deadline the blocking wait then keeps.
        if timerTimeout > 0 { window = min(window, Int64(timerTimeout - 1) * 1_000_000) }
        if window > 0 {
            repeat {
                let count = wait(for: events, timeoutMilliseconds: 0)
                if count > 0 { return count }
            } while IdlePolling.now() - idleSince < window
        }
        let count = wait(for: events, timeoutMilliseconds: timerTimeoutMilliseconds())
        state.idlePolling.woke(afterIdleNanoseconds: IdlePolling.now() - idleSince)
        return count
    }

    private func wait(for events: borrowing EpollEventBuffer, timeoutMilliseconds: Int32) -> Int {
        while true {
            let count = Linux.epollWait(epollFD, events, timeoutMilliseconds: timeoutMilliseconds)
            if count >= 0 { return Int(count) }
            // Only EINTR is possible for a valid epoll set and buffer.
            let error = errno
            precondition(error == EINTR, "\(EventLoopError.system("epoll_wait", errno: error))")
        }
    }

    private enum Progress { case running, finished }

    /// How many rounds of queued tasks one iteration runs at most. A task the round runs may
    /// queue another (a handler resumed, a flush deferred behind the handlers): running it in
    /// the same iteration spares an `epoll_wait` for each hop (a unary call took three on its
    /// way to the socket), while the bound keeps tasks that keep queueing from holding off I/O.
    static let taskRoundsPerIteration = 8

    private func runQueuedTasks() -> Progress {
        for round in 1...Self.taskRoundsPerIteration {
            var tasks = state.taskBatch
            state.taskBatch = []
            let shuttingDown = inbox.takeAll(into: &tasks)
            let executor = asUnownedTaskExecutor()
            for task in tasks {
                switch task {
                case .closure(let body): body()
                case .counted(let body, let counter):
                    body()
                    counter.taskRan()
                case .job(let job): job.runSynchronously(on: executor)
                }
            }
            // Kept for the next round unless a burst made it large: the capacity is the bound.
            tasks.removeAll(keepingCapacity: tasks.capacity <= 1_024)
            state.taskBatch = tasks
            if shuttingDown {
                closeAllHandlers()
                cancelAllTimers()
                // Tasks queued by the tasks or close hooks above keep the loop going one more
                // round; their eventfd write makes the next wait return at once.
                return inbox.finishShutdownIfIdle() ? .finished : .running
            }
            // A wake-up written meanwhile is not consumed here: the next wait returns at once.
            guard round < Self.taskRoundsPerIteration, inbox.hasTasks else { break }
        }
        return .running
    }
}

extension EventLoop {
    /// The loop's read buffer (64 KiB), shared by every connection on the loop: a handler reads
    /// into it and consumes the bytes before it returns. On the loop only.
    package var readBuffer: UnsafeMutableRawBufferPointer { state.readBuffer }
}
