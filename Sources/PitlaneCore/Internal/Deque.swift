/// A first-in first-out queue on a ring buffer: O(1) append and removal at the front.
/// Shared with the transports in this package, not public API; inlinable so that each module
/// using it gets code specialized for its element type, not generic code that looks up type
/// metadata on every call.
///
/// A queue that never holds two elements at once (most of a call's: its request parts as the
/// handler keeps up, its flow-control debts) keeps its element inline and allocates nothing;
/// the ring buffer is allocated when a second element arrives, and kept unless it is the
/// smallest and empties.
@usableFromInline
package struct Deque<Element> {
    @usableFromInline var storage: [Element?] = []
    /// The element, while `storage` is unallocated (`count` is then 0 or 1).
    @usableFromInline var lone: Element?
    @usableFromInline var head = 0
    @usableFromInline var storedCount = 0

    @inlinable package var count: Int { storedCount }

    @inlinable package init() {}

    @inlinable package var isEmpty: Bool { count == 0 }

    @inlinable package var first: Element? {
        if storage.isEmpty { return lone }
        return isEmpty ? nil : storage[head]
    }

    @inlinable package mutating func append(_ element: Element) {
        if storage.isEmpty && storedCount == 0 {
            lone = element
            storedCount = 1
            return
        }
        if storage.isEmpty || count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        storedCount += 1
    }

    /// The element `offset` places from the front.
    @inlinable package subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < count, "Deque index out of range")
        if storage.isEmpty { return lone! }
        return storage[(head + offset) % storage.count]!
    }

    @inlinable package mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        storedCount -= 1
        if storage.isEmpty {
            defer { lone = nil }
            return lone
        }
        let element = storage[head]
        if storedCount == 0 && storage.count == Self.minimumCapacity {
            // Emptied, at the smallest ring: freed, so that an idle stream whose first parts
            // arrived together holds no ring; larger rings, grown by sustained bursts, stay.
            storage = []
            head = 0
            return element
        }
        storage[head] = nil
        head = (head + 1) % storage.count
        return element
    }

    @usableFromInline static var minimumCapacity: Int { 4 }

    @inlinable package mutating func removeAll() {
        storage = []
        lone = nil
        head = 0
        storedCount = 0
    }

    /// Doubles the ring buffer (or allocates it, moving the lone element in).
    @inlinable mutating func grow() {
        // reserveCapacity and append are specialized for Element here; Array(repeating:count:)
        // allocates through the standard library's generic code, which looks up the array's
        // type metadata (about 700 instructions per ring buffer).
        let capacity = max(Self.minimumCapacity, storage.count * 2)
        var grown: [Element?] = []
        grown.reserveCapacity(capacity)
        for _ in 0..<capacity { grown.append(nil) }
        if storage.isEmpty {
            grown[0] = lone
            lone = nil
        } else {
            for index in 0..<count { grown[index] = storage[(head + index) % storage.count] }
        }
        storage = grown
        head = 0
    }
}

extension Deque: Sendable where Element: Sendable {}
