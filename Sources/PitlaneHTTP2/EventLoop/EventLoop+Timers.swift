import PitlaneCore

extension EventLoop {
    /// Identifies a timer for ``EventLoop/cancelTimer(_:)`` on the loop that scheduled it.
    public struct TimerID: Hashable, Sendable {
        fileprivate let rawValue: UInt64
    }

    /// Runs `task` on the loop once `deadline` has passed; never earlier. Loop thread only.
    ///
    /// Timers run in deadline order (equal deadlines in scheduling order), after the handlers
    /// of the iteration in which they fall due. The loop's wait wakes with millisecond
    /// granularity, rounded up, so a timer may run up to about a millisecond late, plus
    /// whatever the loop was busy with. A timer scheduled by a timer callback for a deadline
    /// already passed runs in the next iteration, so a timer that keeps rescheduling itself
    /// cannot starve I/O.
    ///
    /// On a ``ManualClock`` the timer is armed on the clock, and runs on the loop once the
    /// clock has been advanced past `deadline`.
    @discardableResult
    public func scheduleTimer(at deadline: ContinuousClock.Instant, _ task: @escaping () -> Void) -> TimerID {
        preconditionInEventLoop()
        state.nextTimerID += 1
        let id = state.nextTimerID
        if timeSource.manualClock != nil {
            let armed = timeSource.schedule(at: deadline) { [weak self] in
                self?.execute { [weak self] in self?.fireManualTimer(id) }
            }
            state.manualTimers[id] = (armed, task)
        } else {
            state.timers.insert(.init(deadline: deadline, id: id, task: task))
        }
        return TimerID(rawValue: id)
    }

    /// Runs `task` on the loop once `delay` has passed; see ``scheduleTimer(at:_:)``.
    @discardableResult
    public func scheduleTimer(after delay: Duration, _ task: @escaping () -> Void) -> TimerID {
        scheduleTimer(at: now + delay, task)
    }

    /// Cancels a timer so that it never runs. Returns false if it already ran or was
    /// cancelled. Loop thread only.
    @discardableResult
    public func cancelTimer(_ id: TimerID) -> Bool {
        preconditionInEventLoop()
        if let (armed, _) = state.manualTimers.removeValue(forKey: id.rawValue) {
            armed.cancel()
            return true
        }
        return state.timers.remove(id: id.rawValue)
    }

    /// The current instant on the loop's time source.
    public var now: ContinuousClock.Instant { timeSource.now }

    private func fireManualTimer(_ id: UInt64) {
        guard let (_, task) = state.manualTimers.removeValue(forKey: id) else { return }
        task()
    }

    /// Drops every pending timer; at shutdown.
    func cancelAllTimers() {
        state.timers.removeAll()
        for (armed, _) in state.manualTimers.values { armed.cancel() }
        state.manualTimers.removeAll()
    }

    /// The `epoll_wait` timeout: -1 (forever) without timers, else the time to the earliest
    /// deadline rounded up to a whole millisecond, so that waking never precedes it.
    func timerTimeoutMilliseconds() -> Int32 {
        guard let deadline = state.timers.earliestDeadline else { return -1 }
        let remaining = now.duration(to: deadline)
        guard remaining > .zero else { return 0 }
        let (seconds, attoseconds) = remaining.components
        // epoll_wait takes at most Int32.max milliseconds, about 24.8 days.
        guard seconds < Int64(Int32.max) / 1000 else { return Int32.max }
        let attosecondsPerMillisecond: Int64 = 1_000_000_000_000_000
        let roundedUp = (attoseconds + attosecondsPerMillisecond - 1) / attosecondsPerMillisecond
        return Int32(seconds * 1000 + roundedUp)
    }

    /// Runs the timers due now that were scheduled before this call.
    func fireDueTimers() {
        guard !state.timers.isEmpty else { return }
        let now = self.now
        let idLimit = state.nextTimerID + 1
        while let timer = state.timers.popDue(at: now, scheduledBefore: idLimit) {
            timer.task()
        }
    }
}
