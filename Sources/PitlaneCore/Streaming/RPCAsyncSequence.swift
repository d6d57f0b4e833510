/// The messages of a stream, as handlers and response handlers read them.
///
/// ```swift
/// for try await request in requests { ... }
/// ```
public struct RPCAsyncSequence<Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
    /// Reads the next element of a source that keeps its own position (a stream).
    package typealias Next = nonisolated(nonsending) @Sendable () async throws(Failure) -> Element?

    private let wrapped: (any AsyncSequence<Element, Failure> & Sendable)?
    /// The library's own streams are read through one closure call per element rather than an
    /// existential iterator per level of wrapping: while a handler waits for a message, every
    /// level keeps a frame on its task's allocator, and those frames are most of what an idle
    /// stream costs.
    private let nextElement: Next?

    /// Wraps any sendable async sequence.
    public init<Wrapped: AsyncSequence<Element, Failure> & Sendable>(wrapping sequence: Wrapped) {
        wrapped = sequence
        nextElement = nil
    }

    /// The elements `next` returns, until it returns nil. Every iterator calls the same
    /// closure: for sources read once, by one task, as every RPC stream is.
    package init(next: @escaping Next) {
        wrapped = nil
        nextElement = next
    }

    /// The rest of a sequence whose iterator has read some of it.
    package init(remainderOf iterator: AsyncIterator) {
        if let next = iterator.nextElement {
            self.init(next: next)
        } else {
            self.init(wrapping: IteratorSequence(iterator: iterator))
        }
    }

    /// The closure that reads this sequence's elements, if it is read through one.
    package var next: Next? { nextElement }

    public struct AsyncIterator: AsyncIteratorProtocol {
        private var iterator: (any AsyncIteratorProtocol<Element, Failure>)?
        fileprivate let nextElement: Next?

        fileprivate init(iterator: (any AsyncIteratorProtocol<Element, Failure>)?, nextElement: Next?) {
            self.iterator = iterator
            self.nextElement = nextElement
        }

        public mutating func next() async throws(Failure) -> Element? {
            try await next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
            if let nextElement { return try await nextElement() }
            return try await iterator!.next(isolation: actor)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(iterator: wrapped?.makeAsyncIterator(), nextElement: nextElement)
    }
}

extension RPCAsyncSequence where Failure == any Error {
    /// A sequence of the given elements, then its end; handy in tests.
    public static func elements(_ elements: [Element]) -> Self {
        RPCAsyncSequence(wrapping: ArraySequence(elements: elements))
    }

    /// A sequence that fails at once with `error`.
    public static func failing(_ error: any Error) -> Self {
        RPCAsyncSequence(wrapping: ThrowingSequence<Element>(error: error))
    }
}

struct ArraySequence<Element: Sendable>: AsyncSequence, Sendable {
    let elements: [Element]

    struct AsyncIterator: AsyncIteratorProtocol {
        var iterator: IndexingIterator<[Element]>
        mutating func next() async throws -> Element? { iterator.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(iterator: elements.makeIterator()) }
}

struct ThrowingSequence<Element: Sendable>: AsyncSequence, Sendable {
    let error: any Error

    struct AsyncIterator: AsyncIteratorProtocol {
        let error: any Error
        mutating func next() async throws -> Element? { throw error }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(error: error) }
}

/// Maps each element of a sequence with a throwing closure (deserializing, for example).
struct MappedSequence<Base: AsyncSequence & Sendable, Element: Sendable>: AsyncSequence, Sendable {
    let base: Base
    let transform: @Sendable (Base.Element) throws -> Element?

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let transform: @Sendable (Base.Element) throws -> Element?

        mutating func next() async throws -> Element? {
            try await next(isolation: nil)
        }

        /// Skips elements the transform maps to nil.
        mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
            while let element = try await base.next(isolation: actor) {
                if let mapped = try transform(element) { return mapped }
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), transform: transform)
    }
}
