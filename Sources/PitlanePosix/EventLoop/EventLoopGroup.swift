import PitlaneCore
import Synchronization

/// A fixed set of running ``EventLoop``s, handed out in turn; by default one per core.
///
/// ```swift
/// let group = try EventLoopGroup()
/// let loop = group.next()
/// // … connections on `loop` …
/// group.shutdownGracefully()
/// ```
public final class EventLoopGroup: Sendable {
    /// The loops, each on its own thread.
    public let loops: [EventLoop]
    private let nextIndex = Atomic<Int>(0)

    /// Starts `threads` loops named `"\(name)-0"`, `"\(name)-1"`, ….
    ///
    /// - Parameter threads: the number of loops, at least 1; defaults to ``System/coreCount``.
    /// - Parameter name: the loops' thread names' prefix (the loop's number follows).
    /// - Throws: the first loop's failure to start, after shutting down those already started.
    /// - Parameter timeSource: the time the loops' timers run on; real time by default.
    /// - Parameter idlePollLimit: how long a loop out of work may poll before it sleeps; see
    ///   ``EventLoop/start(name:timeSource:idlePollLimit:)``.
    public init(
        threads: Int = System.coreCount, name: String = "pitlane", timeSource: TimeSource = .continuous,
        idlePollLimit: Duration = .zero
    ) throws(EventLoopError) {
        precondition(threads >= 1, "an event loop group needs at least one thread")
        var loops: [EventLoop] = []
        do {
            for index in 0..<threads {
                loops.append(try EventLoop.start(name: "\(name)-\(index)", timeSource: timeSource, idlePollLimit: idlePollLimit))
            }
        } catch {
            for loop in loops { loop.shutdownGracefully() }
            throw error
        }
        self.loops = loops
    }

    /// The next loop, round-robin. Safe from any thread.
    public func next() -> EventLoop {
        let index = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(UInt(bitPattern: index) % UInt(loops.count))]
    }

    /// Shuts every loop down (see ``EventLoop/shutdownGracefully()``) and returns once all
    /// their threads have ended. Safe from any thread that is not one of the group's loops.
    public func shutdownGracefully() {
        for loop in loops { loop.shutdownGracefully() }
    }

    /// Shuts the loops down on a thread of its own and returns at once: shutting down joins
    /// the loop threads, which must not block a Swift concurrency thread or a loop (a
    /// transport's `deinit` may run on either).
    public func shutdownInBackground() {
        let loops = self
        do {
            try PosixThread.spawnDetached(name: "pitlane-shutdown") { loops.shutdownGracefully() }
        } catch {
            loops.shutdownGracefully()
        }
    }
}
