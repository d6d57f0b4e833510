import PitlaneCore

extension EventLoop {
    /// Identifies a timer for ``EventLoop/cancelTimer(_:)`` on the loop that scheduled it.
    public struct TimerID: Hashable, Sendable {
        fileprivate let handle: TimerHeap.Handle
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
    /// On a `ManualClock` the timer is armed on the clock, and runs on the loop once the
    /// clock has been advanced past `deadline`.
    @discardableResult
    public func scheduleTimer(at deadline: ContinuousClock.Instant, _ task: @escaping () -> Void) -> TimerID {
        preconditionInEventLoop()
        guard timeSource.manualClock != nil else {
            return TimerID(handle: state.timers.insert(deadline: state.timers.deadlineKey(deadline), task))
        }
        let id = TimerID(handle: state.timers.hold(task))
        state.manualTimers[id] = timeSource.schedule(at: deadline) { [weak self] in
            self?.execute { [weak self] in self?.fireManualTimer(id) }
        }
        return id
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
        if !state.manualTimers.isEmpty { state.manualTimers.removeValue(forKey: id)?.cancel() }
        return state.timers.remove(id.handle)
    }

    /// The current instant on the loop's time source.
    public var now: ContinuousClock.Instant { timeSource.now }

    private func fireManualTimer(_ id: TimerID) {
        guard state.manualTimers.removeValue(forKey: id) != nil, let task = state.timers.take(id.handle) else { return }
        task()
    }

    /// Drops every pending timer; at shutdown.
    func cancelAllTimers() {
        state.timers.removeAll()
        for armed in state.manualTimers.values { armed.cancel() }
        state.manualTimers.removeAll()
    }

    /// The `epoll_wait` timeout: -1 (forever) without timers, else the time to the earliest
    /// deadline rounded up to a whole millisecond, so that waking never precedes it.
    func timerTimeoutMilliseconds() -> Int32 {
        guard let deadline = state.timers.earliestDeadline else { return -1 }
        let remaining = deadline - state.timers.nowKey(now)
        guard remaining > 0 else { return 0 }
        // epoll_wait takes at most Int32.max milliseconds, about 24.8 days.
        let milliseconds = (remaining + 999_999) / 1_000_000
        return Int32(clamping: milliseconds)
    }

    /// Runs the timers due now that were scheduled before this call.
    func fireDueTimers() {
        guard !state.timers.isEmpty else { return }
        let now = state.timers.nowKey(self.now)
        let sequenceLimit = state.timers.nextSequence
        while let task = state.timers.popDue(at: now, scheduledBefore: sequenceLimit) {
            task()
        }
    }
}
