import Synchronization

/// Time that stands still until a test moves it: ``advance(by:)`` runs every timer that falls
/// due, in deadline order, each at its own deadline.
///
/// Give it to a stack as ``TimeSource/manual(_:)``. Event loops on a manual clock keep their
/// timers here too, so ``armedTimers`` counts everything waiting on the clock and
/// ``waitForArmedTimers(atLeast:)`` tells a test that the code it drives has reached its wait.
///
/// ```swift
/// let clock = ManualClock()
/// let tracker = RaceTracker(settings: .init(timeSource: .manual(clock)))
/// await clock.waitForArmedTimers(atLeast: 1)   // the race waits for its next tick
/// clock.advance(by: .milliseconds(100))        // one tick
/// ```
public final class ManualClock: Sendable {
    private struct Timer {
        let deadline: ContinuousClock.Instant
        let action: @Sendable () -> Void
    }

    private struct State {
        var now: ContinuousClock.Instant
        var timers: [UInt64: Timer] = [:]
        var nextID: UInt64 = 0
        var armedWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    /// A clock reading `start` (the real time now, by default) until advanced.
    public init(start: ContinuousClock.Instant = .now) {
        state = Mutex(State(now: start))
    }

    /// The clock's reading.
    public var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// Timers armed and not yet run or cancelled: sleepers, deadlines, event-loop timers.
    public var armedTimers: Int { state.withLock { $0.timers.count } }

    /// Moves the clock forward by `duration`, running each timer due on the way (timers they
    /// arm within the step run too). Timers run on the caller's thread; an event loop's run
    /// on that loop, soon after.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a clock does not go back")
        advance(to: now + duration)
    }

    /// Moves the clock forward to `instant` (never back); see ``advance(by:)``.
    public func advance(to instant: ContinuousClock.Instant) {
        while true {
            let due: Timer? = state.withLock { state in
                let next = state.timers.filter { $0.value.deadline <= instant }
                    .min { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
                guard let (id, timer) = next else {
                    state.now = max(state.now, instant)
                    return nil
                }
                state.timers[id] = nil
                state.now = max(state.now, timer.deadline)
                return timer
            }
            guard let due else { return }
            due.action()
        }
    }

    /// Returns once at least `count` timers are armed (and at once if they are).
    public func waitForArmedTimers(atLeast count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.timers.count >= count { return true }
                state.armedWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> ScheduledTimer {
        let (id, ready) = state.withLock { state in
            state.nextID += 1
            state.timers[state.nextID] = Timer(deadline: deadline, action: action)
            let count = state.timers.count
            let ready = state.armedWaiters.filter { $0.count <= count }.map(\.continuation)
            state.armedWaiters.removeAll { $0.count <= count }
            return (state.nextID, ready)
        }
        for waiter in ready { waiter.resume() }
        return ScheduledTimer(manual: self, id: id)
    }

    func cancel(_ id: UInt64) {
        _ = state.withLock { $0.timers.removeValue(forKey: id) }
    }
}
