import Testing

@testable import PitlaneCore

@Suite("Deque", .timeLimit(.minutes(1)))
struct DequeTests {
    @Test("keeps first-in first-out order through its inline element, growth, wrap-around and removeAll")
    func matchesAnArray() {
        var generator = SystemRandomNumberGenerator()
        var deque = Deque<Int>()
        var model: [Int] = []
        var next = 0
        for step in 0..<20_000 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<5:
                deque.append(next)
                model.append(next)
                next += 1
            case 5..<9:
                #expect(deque.popFirst() == (model.isEmpty ? nil : model.removeFirst()))
            default:
                if step % 50 == 0 {
                    deque.removeAll()
                    model.removeAll()
                }
            }
            #expect(deque.count == model.count && deque.first == model.first)
            if let last = model.indices.last {
                #expect(deque[last] == model[last])
            }
        }
    }

    @Test("one element at a time allocates no ring buffer; a second one does")
    func loneElement() {
        var deque = Deque<[UInt8]>()
        for value in 0..<10 {
            deque.append([UInt8(value)])
            #expect(deque.storage.isEmpty && deque.first == [UInt8(value)] && deque[0] == [UInt8(value)])
            #expect(deque.popFirst() == [UInt8(value)] && deque.isEmpty)
        }
        deque.append([1])
        deque.append([2])
        #expect(deque.storage.count == 4 && deque.count == 2)
        #expect(deque.popFirst() == [1] && deque.popFirst() == [2] && deque.popFirst() == nil)
        // Emptied at the smallest ring: freed (an idle stream holds none); back to inline.
        #expect(deque.storage.isEmpty)
        deque.append([3])
        #expect(deque.storage.isEmpty && deque.first == [3])
    }

    @Test("a ring grown past the smallest stays allocated when it empties")
    func grownRingKept() {
        var deque = Deque<Int>()
        for value in 0..<5 { deque.append(value) }
        #expect(deque.storage.count == 8)
        for value in 0..<5 { #expect(deque.popFirst() == value) }
        #expect(deque.isEmpty && deque.storage.count == 8)
        deque.append(9)
        #expect(deque.first == 9 && deque[0] == 9 && deque.count == 1)
    }
}
