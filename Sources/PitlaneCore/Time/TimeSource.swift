import Synchronization

/// Where a gRPC stack reads the time and arms its timers: real time, or a ``ManualClock``
/// that a test steps.
///
/// Everything that schedules by time takes one (transports' keepalive, idle, age and connect
/// timers, backoff, deadlines, hedging delays, and the services' own clocks), so a test about
/// time steps a clock instead of sleeping, and asserts outcomes rather than milliseconds.
///
/// ```swift
/// let clock = ManualClock()
/// var config = HTTP2ServerTransport.Config.defaults
/// config.timeSource = .manual(clock)
/// config.connection.maxIdle = .seconds(30)
/// // … open a connection …
/// clock.advance(by: .seconds(31))   // the idle timer fires now, not in half a minute
/// ```
///
/// Instants are `ContinuousClock.Instant`s for both kinds: a manual clock starts at the real
/// time it was made and moves only when told.
public struct TimeSource: Sendable {
    private enum Kind: Sendable {
        case continuous
        case manual(ManualClock)
    }

    private let kind: Kind

    /// Real time (`ContinuousClock`); timers run on Dispatch.
    public static var continuous: TimeSource { TimeSource(kind: .continuous) }

    /// Time that moves only when `clock` is advanced.
    public static func manual(_ clock: ManualClock) -> TimeSource { TimeSource(kind: .manual(clock)) }

    /// The manual clock behind this source, if it is one.
    public var manualClock: ManualClock? {
        if case .manual(let clock) = kind { return clock }
        return nil
    }

    /// The current instant.
    public var now: ContinuousClock.Instant {
        switch kind {
        case .continuous: ContinuousClock.now
        case .manual(let clock): clock.now
        }
    }

    /// Runs `action` once `deadline` has passed, on some thread, unless the returned timer is
    /// cancelled first. A cancelled timer is freed at once. (A cancelled `Task.sleep` is not:
    /// its wake-up stays queued, with its task's memory, until the deadline, so a server that
    /// armed one per RPC deadline would hold memory for as long as its clients' timeouts.)
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> ScheduledTimer {
        switch kind {
        case .continuous: ScheduledTimer(dispatchAt: deadline, action)
        case .manual(let clock): clock.schedule(at: deadline, action)
        }
    }

    /// Suspends until `deadline`. When the task is cancelled it throws `CancellationError` at
    /// once and frees the timer.
    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try Task.checkCancellation()
        guard deadline > now else { return }
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let timer = schedule(at: deadline) { sleeper.fire() }
                sleeper.arm(continuation, timer: timer)
            }
        } onCancel: {
            sleeper.cancel()
        }
    }

    /// Suspends for `duration`; see ``sleep(until:)``.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }
}

/// One `sleep`: the timer and the cancellation handler race to resume it, in any order with
/// its arming.
private final class Sleeper: Sendable {
    private enum Phase {
        case waiting
        case armed(CheckedContinuation<Void, any Error>, ScheduledTimer)
        case fired
        case cancelled
        case done
    }

    private let phase = Mutex(Phase.waiting)

    func arm(_ continuation: CheckedContinuation<Void, any Error>, timer: ScheduledTimer) {
        let early: Result<Void, any Error>? = phase.withLock { phase in
            switch phase {
            case .waiting:
                phase = .armed(continuation, timer)
                return nil
            case .fired:
                phase = .done
                return .success(())
            case .cancelled, .armed, .done:
                phase = .done
                return .failure(CancellationError())
            }
        }
        guard let early else { return }
        if case .failure = early { timer.cancel() }
        continuation.resume(with: early)
    }

    func fire() {
        let continuation = phase.withLock { phase -> CheckedContinuation<Void, any Error>? in
            switch phase {
            case .waiting:
                phase = .fired
                return nil
            case .armed(let continuation, _):
                phase = .done
                return continuation
            case .fired, .cancelled, .done:
                return nil
            }
        }
        continuation?.resume()
    }

    func cancel() {
        let armed = phase.withLock { phase -> (CheckedContinuation<Void, any Error>, ScheduledTimer)? in
            switch phase {
            case .waiting:
                phase = .cancelled
                return nil
            case .armed(let continuation, let timer):
                phase = .done
                return (continuation, timer)
            case .fired, .cancelled, .done:
                return nil
            }
        }
        guard let (continuation, timer) = armed else { return }
        timer.cancel()
        continuation.resume(throwing: CancellationError())
    }
}
