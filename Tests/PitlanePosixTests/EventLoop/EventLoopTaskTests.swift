import Glibc
import TestSupport
import Testing

@testable import PitlanePosix

@Suite("EventLoop tasks", .timeLimit(.minutes(1)))
struct EventLoopTaskTests {
    @Test("tasks from many threads all run, on the loop, in FIFO order per submitter")
    func fifoPerSubmitter() async throws {
        let loop = try EventLoop.start(name: "fifo")
        defer { loop.shutdownGracefully() }
        let submitters = 4
        let tasksEach = 2_000
        let log = Locked<[(submitter: Int, sequence: Int, onLoop: Bool)]>([])

        let threads = try (0..<submitters).map { submitter in
            try PosixThread.spawn(name: "submitter-\(submitter)") {
                for sequence in 0..<tasksEach {
                    loop.execute {
                        log.withLock { $0.append((submitter, sequence, loop.inEventLoop)) }
                    }
                }
            }
        }
        for thread in threads { thread.join() }
        // One queue: a task queued after every submitter finished runs after all their tasks.
        try await loop.submit {}

        let entries = log.withLock { $0 }
        #expect(entries.count == submitters * tasksEach)
        #expect(entries.filter { !$0.onLoop }.isEmpty)
        for submitter in 0..<submitters {
            let sequences = entries.filter { $0.submitter == submitter }.map(\.sequence)
            #expect(sequences == Array(0..<tasksEach), "submitter \(submitter)")
        }
    }

    @Test("a task executed from the loop itself runs after the current task")
    func executeFromLoop() async throws {
        let loop = try EventLoop.start(name: "reentrant")
        defer { loop.shutdownGracefully() }
        let order = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                let order = Locked<[String]>([])
                loop.execute {
                    order.withLock { $0.append("inner") }
                    continuation.resume(returning: order.withLock { $0 })
                }
                order.withLock { $0.append("outer") }
            }
        }
        #expect(order == ["outer", "inner"])
    }

    @Test("a task that keeps queueing itself does not hold off timers")
    func requeueingTaskYields() async throws {
        let loop = try EventLoop.start(name: "requeue")
        defer { loop.shutdownGracefully() }
        let stopped = Locked(false)
        let runs = Locked(0)
        @Sendable func again() {
            guard !stopped.withLock({ $0 }) else { return }
            runs.withLock { $0 += 1 }
            loop.execute(again)
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            loop.execute {
                loop.scheduleTimer(after: .zero) {
                    stopped.withLock { $0 = true }
                    continuation.resume()
                }
                again()
            }
        }
        // The rounds one iteration runs are bounded, so the timer fires in the next.
        #expect(runs.withLock { $0 } >= 1)
    }

    @Test("submit returns the body's value and error, and the loop survives a throwing body")
    func submitResults() async throws {
        struct Failure: Error, Equatable {}
        let loop = try EventLoop.start(name: "submit")
        defer { loop.shutdownGracefully() }

        #expect(loop.inEventLoop == false)
        #expect(try await loop.submit { loop.inEventLoop })
        await #expect(throws: Failure()) { try await loop.submit { throw Failure() } }
        #expect(try await loop.submit { 6 * 7 } == 42)
    }

    @Test("a group hands out its loops round-robin")
    func groupRoundRobin() async throws {
        let group = try EventLoopGroup(threads: 3, name: "group")
        defer { group.shutdownGracefully() }
        let picked = (0..<6).map { _ in ObjectIdentifier(group.next()) }
        let loops = group.loops.map(ObjectIdentifier.init)
        #expect(picked == loops + loops)
        #expect(Set(group.loops.map(\.name)) == ["group-0", "group-1", "group-2"])
        #expect(System.coreCount >= 1)
        for loop in group.loops {
            #expect(try await loop.submit { loop.inEventLoop })
        }
    }
}
