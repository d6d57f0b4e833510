/// The loop's pending timers: a binary min-heap ordered by deadline, then by scheduling order,
/// with each timer's heap position indexed so that cancelling is O(log n) rather than leaving
/// dead entries behind (a cancelled 30-second RPC deadline per call would otherwise pile up).
struct TimerHeap {
    struct Timer {
        let deadline: ContinuousClock.Instant
        /// Increases with every timer a loop schedules; breaks deadline ties first-in, first-out.
        let id: UInt64
        let task: () -> Void
    }

    private var timers: [Timer] = []
    private var positions: [UInt64: Int] = [:]

    var isEmpty: Bool { timers.isEmpty }

    var earliestDeadline: ContinuousClock.Instant? { timers.first?.deadline }

    mutating func insert(_ timer: Timer) {
        timers.append(timer)
        positions[timer.id] = timers.count - 1
        siftUp(timers.count - 1)
    }

    /// Removes the timer with `id`; false if it already fired or was removed.
    mutating func remove(id: UInt64) -> Bool {
        guard let index = positions[id] else { return false }
        removeTimer(at: index)
        return true
    }

    /// Removes and returns the earliest timer if it is due at `now` and was scheduled before
    /// the timer numbered `idLimit`.
    mutating func popDue(at now: ContinuousClock.Instant, scheduledBefore idLimit: UInt64) -> Timer? {
        guard let first = timers.first, first.deadline <= now, first.id < idLimit else { return nil }
        return removeTimer(at: 0)
    }

    mutating func removeAll() {
        timers.removeAll()
        positions.removeAll()
    }

    @discardableResult
    private mutating func removeTimer(at index: Int) -> Timer {
        let removed = timers[index]
        positions[removed.id] = nil
        let last = timers.removeLast()
        if index < timers.count {
            timers[index] = last
            positions[last.id] = index
            siftDown(index)
            siftUp(index)
        }
        return removed
    }

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        (timers[a].deadline, timers[a].id) < (timers[b].deadline, timers[b].id)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < timers.count && precedes(left, smallest) { smallest = left }
            if right < timers.count && precedes(right, smallest) { smallest = right }
            guard smallest != parent else { return }
            swapAt(parent, smallest)
            parent = smallest
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        timers.swapAt(a, b)
        positions[timers[a].id] = a
        positions[timers[b].id] = b
    }
}
