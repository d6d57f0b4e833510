import Testing

@testable import PitlanePosix

@Suite("TimerHeap", .timeLimit(.minutes(5)))
struct TimerHeapTests {
    /// What popped timers ran, in order.
    private final class Log {
        var ran: [Int] = []
    }

    @Test("pops due timers by deadline then scheduling order, skipping removed ones")
    func ordering() {
        var generator = SystemRandomNumberGenerator()
        var heap = TimerHeap()
        let log = Log()
        var expected: [(deadline: TimerHeap.Key, number: Int)] = []
        var handles: [TimerHeap.Handle] = []
        for number in 0..<500 {
            let deadline = TimerHeap.Key(Int.random(in: 0..<50, using: &generator))
            handles.append(heap.insert(deadline: deadline) { log.ran.append(number) })
            expected.append((deadline, number))
        }
        for number in stride(from: 3, to: 500, by: 7) {
            let removed = heap.remove(handles[number])
            let removedAgain = heap.remove(handles[number])
            #expect(removed && !removedAgain)
        }
        expected.removeAll { $0.number % 7 == 3 }
        expected.sort { ($0.deadline, $0.number) < ($1.deadline, $1.number) }

        let early = heap.popDue(at: -1, scheduledBefore: .max)
        #expect(early == nil)
        while let task = heap.popDue(at: 50, scheduledBefore: .max) { task() }
        #expect(log.ran == expected.map(\.number))
        #expect(heap.isEmpty)
    }

    @Test("holds back timers scheduled after the round began")
    func roundLimit() {
        var heap = TimerHeap()
        let log = Log()
        _ = heap.insert(deadline: 10) { log.ran.append(1) }
        let limit = heap.nextSequence
        _ = heap.insert(deadline: 5) { log.ran.append(2) }
        _ = heap.insert(deadline: 0) { log.ran.append(3) }
        // The later ones are due first, but were scheduled after the limit was taken.
        let heldBack = heap.popDue(at: 10, scheduledBefore: limit)
        #expect(heldBack == nil)
        #expect(heap.earliestDeadline == 0)
        while let task = heap.popDue(at: 10, scheduledBefore: heap.nextSequence) { task() }
        #expect(log.ran == [3, 2, 1])
    }

    @Test("a handle matches nothing once its timer ran, even after its slot is reused")
    func staleHandles() {
        var heap = TimerHeap()
        let log = Log()
        let first = heap.insert(deadline: 1) { log.ran.append(1) }
        heap.popDue(at: 1, scheduledBefore: .max)?()
        let second = heap.insert(deadline: 2) { log.ran.append(2) }
        let removedFirst = heap.remove(first)
        #expect(!removedFirst)
        let held = heap.hold { log.ran.append(3) }
        heap.removeAll()
        let removedSecond = heap.remove(second)
        let tookHeld = heap.take(held)
        #expect(!removedSecond && tookHeld == nil)
        let third = heap.insert(deadline: 3) { log.ran.append(4) }
        let removedSecondAgain = heap.remove(second)
        #expect(!removedSecondAgain)
        heap.take(third)?()
        #expect(log.ran == [1, 4])
    }

    @Test("deadlines round up and the present rounds down, so nothing runs early")
    func rounding() {
        let epoch = ContinuousClock.now
        let heap = TimerHeap(epoch: epoch)
        let deadline = epoch + .nanoseconds(1_000) + .init(secondsComponent: 0, attosecondsComponent: 1)
        #expect(heap.deadlineKey(deadline) == 1_001)
        #expect(heap.nowKey(deadline) == 1_000)
        #expect(heap.deadlineKey(epoch + .seconds(Int64.max / 2)) == .max / 2)
        #expect(heap.deadlineKey(epoch - .seconds(3)) == -3_000_000_000)
    }
}
