import PitlanePosix
import TestSupport
import Testing

@Suite("EventLoop timers", .timeLimit(.minutes(1)))
struct EventLoopTimerTests {
    /// Timer callbacks' record, confined to the loop like the callbacks.
    private final class Log {
        var fired: [String] = []
        var early: [String] = []
        /// Results of `cancelTimer` calls, checked once back in the test.
        var cancelled: [Bool] = []
    }

    @Test("timers fire in deadline order, never early, and cancelled timers never fire")
    func orderAndCancellation() async throws {
        let loop = try EventLoop.start(name: "timers")
        defer { loop.shutdownGracefully() }
        let delays: [(label: String, milliseconds: Int)] = [
            ("30", 30), ("5", 5), ("20", 20), ("0", 0), ("10", 10), ("12-cancelled", 12), ("15", 15),
            ("40-cancelled", 40), ("25", 25),
        ]
        let (fired, early, cancelled) = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                let log = Log()
                let start = ContinuousClock.now
                var ids: [String: EventLoop.TimerID] = [:]
                for (label, milliseconds) in delays {
                    let deadline = start + .milliseconds(milliseconds)
                    ids[label] = loop.scheduleTimer(at: deadline) {
                        if ContinuousClock.now < deadline { log.early.append(label) }
                        log.fired.append(label)
                    }
                }
                log.cancelled.append(loop.cancelTimer(ids["12-cancelled"]!))
                log.cancelled.append(loop.cancelTimer(ids["40-cancelled"]!))
                log.cancelled.append(loop.cancelTimer(ids["40-cancelled"]!))
                // Later than every cancelled deadline: had they fired, they would be logged.
                loop.scheduleTimer(at: start + .milliseconds(50)) {
                    continuation.resume(returning: (log.fired, log.early, log.cancelled))
                }
            }
        }
        #expect(fired == ["0", "5", "10", "15", "20", "25", "30"])
        #expect(early == [])
        #expect(cancelled == [true, true, false])
    }

    @Test("equal deadlines fire in scheduling order; a timer cancelled by one due with it does not fire")
    func cancelWithinRound() async throws {
        let loop = try EventLoop.start(name: "timer-round")
        defer { loop.shutdownGracefully() }
        let (fired, cancelled) = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                let log = Log()
                let deadline = ContinuousClock.now + .milliseconds(5)
                var second: EventLoop.TimerID?
                let first = loop.scheduleTimer(at: deadline) {
                    log.fired.append("first")
                    log.cancelled.append(loop.cancelTimer(second!))
                }
                second = loop.scheduleTimer(at: deadline) { log.fired.append("second") }
                loop.scheduleTimer(at: deadline) { log.fired.append("third") }
                loop.scheduleTimer(at: deadline + .milliseconds(1)) {
                    log.cancelled.append(loop.cancelTimer(first))
                    continuation.resume(returning: (log.fired, log.cancelled))
                }
            }
        }
        #expect(fired == ["first", "third"])
        #expect(cancelled == [true, false])
    }

    @Test("a timer that keeps rescheduling itself does not starve tasks")
    func reschedulingTimerYields() async throws {
        let loop = try EventLoop.start(name: "timer-starve")
        defer { loop.shutdownGracefully() }
        let rounds = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                // (rounds, stopped); a Mutex only because tasks must be Sendable.
                let state = Locked((rounds: 0, stopped: false))
                func again() {
                    let stopped = state.withLock { state in
                        if !state.stopped { state.rounds += 1 }
                        return state.stopped
                    }
                    if !stopped { loop.scheduleTimer(after: .zero, again) }
                }
                loop.scheduleTimer(after: .zero, again)
                loop.execute {
                    let rounds = state.withLock { state in
                        state.stopped = true
                        return state.rounds
                    }
                    continuation.resume(returning: rounds)
                }
            }
        }
        // A timer's successor, due at once, waits for the next iteration, while a task queued
        // by a task may run in the same one: the task queued beside the first timer runs
        // before it or after a round or two, not never.
        #expect((0...2).contains(rounds), "\(rounds) rounds before the task ran")
    }
}
