/// The loop's pending timers: a binary min-heap ordered by deadline, then by scheduling order.
///
/// Each timer's task lives in a slot that knows the timer's place in the heap, so cancelling
/// is O(log n) with no hashing and leaves nothing behind (a cancelled 30-second RPC deadline
/// per call would otherwise pile up). Slots are reused, so scheduling allocates nothing once
/// the loop has held as many timers at once as it ever will. Deadlines are kept as whole
/// nanoseconds since the heap's epoch: comparing them is comparing integers.
struct TimerHeap {
    /// Names a timer; a handle kept after its timer ran or was cancelled matches nothing,
    /// even once its slot holds another timer.
    struct Handle: Hashable, Sendable {
        fileprivate let slot: Int32
        fileprivate let generation: UInt32
    }

    /// A deadline as the heap orders it: nanoseconds since `epoch`.
    typealias Key = Int64

    private struct Entry {
        let deadline: Key
        /// Increases with every timer scheduled; breaks deadline ties first-in, first-out.
        let sequence: UInt64
        let slot: Int32
    }

    private struct Slot {
        var generation: UInt32 = 0
        /// The entry's index in `entries`; `held` for a timer armed elsewhere, `free` when unused.
        var position: Int32 = Slot.free
        var task: (() -> Void)?

        static let free: Int32 = -1
        static let held: Int32 = -2
    }

    private var entries: [Entry] = []
    private var slots: [Slot] = []
    private var freeSlots: [Int32] = []
    /// The sequence number the next timer gets.
    private(set) var nextSequence: UInt64 = 0
    let epoch: ContinuousClock.Instant

    init(epoch: ContinuousClock.Instant = .now) {
        self.epoch = epoch
    }

    var isEmpty: Bool { entries.isEmpty }

    var earliestDeadline: Key? { entries.isEmpty ? nil : entries[0].deadline }

    /// `instant` as a key, rounded up: a timer never runs before its deadline.
    func deadlineKey(_ instant: ContinuousClock.Instant) -> Key {
        key(epoch.duration(to: instant), roundingUp: true)
    }

    /// `instant` as a key, rounded down, to compare deadlines with.
    func nowKey(_ instant: ContinuousClock.Instant) -> Key {
        key(epoch.duration(to: instant), roundingUp: false)
    }

    private func key(_ duration: Duration, roundingUp: Bool) -> Key {
        let (seconds, attoseconds) = duration.components
        // About 146 years either way: far enough for any deadline, clear of overflow.
        let limit: Int64 = 4_611_686_018
        guard seconds < limit else { return .max / 2 }
        guard seconds > -limit else { return .min / 2 }
        var nanoseconds = attoseconds / 1_000_000_000
        if roundingUp && nanoseconds * 1_000_000_000 < attoseconds { nanoseconds += 1 }
        return seconds * 1_000_000_000 + nanoseconds
    }

    /// Schedules `task` for `deadline`.
    mutating func insert(deadline: Key, _ task: @escaping () -> Void) -> Handle {
        let handle = occupy(task)
        entries.append(Entry(deadline: deadline, sequence: nextSequence, slot: handle.slot))
        nextSequence += 1
        slots[Int(handle.slot)].position = Int32(entries.count - 1)
        siftUp(entries.count - 1)
        return handle
    }

    /// Keeps `task` for a timer armed elsewhere (on a manual clock), out of the heap, until
    /// `take` or `remove`.
    mutating func hold(_ task: @escaping () -> Void) -> Handle {
        let handle = occupy(task)
        slots[Int(handle.slot)].position = Slot.held
        return handle
    }

    /// Removes the timer; false if it already ran or was removed.
    mutating func remove(_ handle: Handle) -> Bool {
        take(handle) != nil
    }

    /// Removes the timer and returns its task; nil if it already ran or was removed.
    mutating func take(_ handle: Handle) -> (() -> Void)? {
        let index = Int(handle.slot)
        guard index < slots.count, slots[index].generation == handle.generation else { return nil }
        let position = slots[index].position
        guard position != Slot.free else { return nil }
        if position != Slot.held { removeEntry(at: Int(position)) }
        return release(slot: handle.slot)
    }

    /// Removes and returns the earliest timer's task if it is due at `now` and was scheduled
    /// before the timer numbered `sequenceLimit`.
    mutating func popDue(at now: Key, scheduledBefore sequenceLimit: UInt64) -> (() -> Void)? {
        guard let first = entries.first, first.deadline <= now, first.sequence < sequenceLimit else { return nil }
        removeEntry(at: 0)
        return release(slot: first.slot)
    }

    /// Drops every timer; handles given out before match nothing afterwards.
    mutating func removeAll() {
        entries.removeAll()
        for slot in slots.indices where slots[slot].position != Slot.free {
            _ = release(slot: Int32(slot))
        }
    }

    // MARK: Slots

    private mutating func occupy(_ task: @escaping () -> Void) -> Handle {
        let slot: Int32
        if let reused = freeSlots.popLast() {
            slot = reused
        } else {
            slots.append(Slot())
            slot = Int32(slots.count - 1)
        }
        slots[Int(slot)].task = task
        return Handle(slot: slot, generation: slots[Int(slot)].generation)
    }

    private mutating func release(slot: Int32) -> (() -> Void)? {
        let index = Int(slot)
        let task = slots[index].task
        slots[index].task = nil
        slots[index].position = Slot.free
        slots[index].generation &+= 1
        freeSlots.append(slot)
        return task
    }

    // MARK: Heap

    private mutating func removeEntry(at index: Int) {
        let last = entries.removeLast()
        guard index < entries.count else { return }
        entries[index] = last
        slots[Int(last.slot)].position = Int32(index)
        siftDown(index)
        siftUp(index)
    }

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        let first = entries[a]
        let second = entries[b]
        return first.deadline < second.deadline || (first.deadline == second.deadline && first.sequence < second.sequence)
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
            if left < entries.count && precedes(left, smallest) { smallest = left }
            if right < entries.count && precedes(right, smallest) { smallest = right }
            guard smallest != parent else { return }
            swapAt(parent, smallest)
            parent = smallest
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        slots[Int(entries[a].slot)].position = Int32(a)
        slots[Int(entries[b].slot)].position = Int32(b)
    }
}
