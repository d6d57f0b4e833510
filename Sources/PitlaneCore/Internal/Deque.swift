/// A first-in first-out queue on a ring buffer: O(1) append and removal at the front.
/// Shared with the transports in this package, not public API; inlinable so that each module
/// using it gets code specialized for its element type, not generic code that looks up type
/// metadata on every call.
@usableFromInline
package struct Deque<Element> {
    @usableFromInline var storage: [Element?] = []
    @usableFromInline var head = 0
    @usableFromInline var storedCount = 0

    @inlinable package var count: Int { storedCount }

    @inlinable package init() {}

    @inlinable package var isEmpty: Bool { count == 0 }

    @inlinable package var first: Element? { isEmpty ? nil : storage[head] }

    @inlinable package mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        storedCount += 1
    }

    /// The element `offset` places from the front.
    @inlinable package subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < count, "Deque index out of range")
        return storage[(head + offset) % storage.count]!
    }

    @inlinable package mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        storedCount -= 1
        return element
    }

    @inlinable package mutating func removeAll() {
        storage = []
        head = 0
        storedCount = 0
    }

    @inlinable mutating func grow() {
        var grown = [Element?](repeating: nil, count: max(4, storage.count * 2))
        for index in 0..<count { grown[index] = storage[(head + index) % storage.count] }
        storage = grown
        head = 0
    }
}

extension Deque: Sendable where Element: Sendable {}
