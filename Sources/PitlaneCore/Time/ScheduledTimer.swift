import Dispatch

/// A timer armed by ``TimeSource/schedule(at:_:)``; ``cancel()`` stops it and frees what it holds.
public struct ScheduledTimer: Sendable {
    private enum Kind: @unchecked Sendable {
        /// Dispatch sources are safe to cancel from any thread.
        case dispatch(any DispatchSourceTimer)
        case manual(ManualClock, id: UInt64)
    }

    private let kind: Kind

    init(manual clock: ManualClock, id: UInt64) {
        kind = .manual(clock, id: id)
    }

    init(dispatchAt deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) {
        let remaining = ContinuousClock.now.duration(to: deadline)
        let nanoseconds = remaining <= .zero ? 0 : remaining / .nanoseconds(1)
        let source = DispatchSource.makeTimerSource(queue: .global())
        // The handler holds the source until it fires or is cancelled, which releases both.
        source.setEventHandler {
            source.cancel()
            action()
        }
        source.schedule(deadline: .now() + .nanoseconds(Int(min(nanoseconds, Double(Int.max / 2)))), leeway: .milliseconds(1))
        source.resume()
        kind = .dispatch(source)
    }

    /// Stops the timer if it has not run; does nothing otherwise. Safe from any thread.
    public func cancel() {
        switch kind {
        case .dispatch(let source): source.cancel()
        case .manual(let clock, let id): clock.cancel(id)
        }
    }
}
