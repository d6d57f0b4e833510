@testable import PitlaneHTTP2
import Testing

@Suite("TimerHeap", .timeLimit(.minutes(5)))
struct TimerHeapTests {
    @Test("pops due timers by deadline then id, skipping removed ones")
    func ordering() {
        var generator = SystemRandomNumberGenerator()
        let start = ContinuousClock.now
        var heap = TimerHeap()
        var expected: [(deadline: ContinuousClock.Instant, id: UInt64)] = []
        for id in UInt64(1)...500 {
            let deadline = start + .milliseconds(Int.random(in: 0..<50, using: &generator))
            heap.insert(.init(deadline: deadline, id: id, task: {}))
            expected.append((deadline, id))
        }
        for id in stride(from: UInt64(3), through: 500, by: 7) {
            let removed = heap.remove(id: id)
            let removedAgain = heap.remove(id: id)
            #expect(removed && !removedAgain)
        }
        expected.removeAll { $0.id % 7 == 3 }
        expected.sort { ($0.deadline, $0.id) < ($1.deadline, $1.id) }

        #expect(heap.popDue(at: start - .milliseconds(1), scheduledBefore: .max) == nil)
        var popped: [UInt64] = []
        while let timer = heap.popDue(at: start + .seconds(1), scheduledBefore: .max) {
            popped.append(timer.id)
        }
        #expect(popped == expected.map(\.id))
        #expect(heap.isEmpty)
    }

    @Test("holds back timers scheduled after the round began")
    func roundLimit() {
        let now = ContinuousClock.now
        var heap = TimerHeap()
        heap.insert(.init(deadline: now, id: 9, task: {}))
        heap.insert(.init(deadline: now - .seconds(1), id: 4, task: {}))
        #expect(heap.popDue(at: now, scheduledBefore: 5)?.id == 4)
        #expect(heap.popDue(at: now, scheduledBefore: 5) == nil)
        #expect(heap.earliestDeadline == now)
    }
}
