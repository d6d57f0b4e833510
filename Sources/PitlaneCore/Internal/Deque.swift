/// A first-in first-out queue on a ring buffer: O(1) append and removal at the front.
/// Shared with the transports in this package, not public API.
package struct Deque<Element> {
    private var storage: [Element?] = []
    private var head = 0
    package private(set) var count = 0

    package init() {}

    package var isEmpty: Bool { count == 0 }

    package var first: Element? { isEmpty ? nil : storage[head] }

    package mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        count += 1
    }

    /// The element `offset` places from the front.
    package subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < count, "Deque index out of range")
        return storage[(head + offset) % storage.count]!
    }

    package mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        return element
    }

    package mutating func removeAll() {
        storage = []
        head = 0
        count = 0
    }

    private mutating func grow() {
        var grown = [Element?](repeating: nil, count: max(16, storage.count * 2))
        for index in 0..<count { grown[index] = storage[(head + index) % storage.count] }
        storage = grown
        head = 0
    }
}

extension Deque: Sendable where Element: Sendable {}
