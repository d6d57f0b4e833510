/// The messages of a stream, as handlers and response handlers read them.
///
/// ```swift
/// for try await request in requests { ... }
/// ```
public struct RPCAsyncSequence<Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
    /// Reads the next element of a source that keeps its own position.
    @usableFromInline package typealias Next = nonisolated(nonsending) @Sendable () async throws(Failure) -> Element?

    /// Where the library's own streams come from, read directly rather than through an
    /// existential iterator per level of wrapping: while a handler waits for a message, every
    /// level keeps a frame on its task's allocator, and those frames are most of what an idle
    /// stream costs. Each is read once, by one task, as every RPC stream is; all iterators of
    /// the sequence read the same source.
    @usableFromInline
    package enum Source: Sendable {
        /// A transport's buffered stream. Code that knows the element type (the server's
        /// decoding of request parts) reads it with no closure between, by specialized code.
        case stream(BufferedStream<Element>)
        /// A server's request messages: a transport's request parts, each decoded as it is
        /// read (or delivered, ``delivering(to:while:)``).
        case decoding(RequestMessages<Element>)
        /// A closure that returns the next element, and nil at the end.
        case next(Next)
        /// Any other sequence, boxed: kept out of line, its existential would make every copy
        /// of every sequence (in each RPC's request, context and closures) 40 bytes larger.
        case sequence(WrappedSequence)
    }

    /// An async sequence of another kind, read through its own iterator.
    @usableFromInline
    package final class WrappedSequence: Sendable {
        let sequence: any AsyncSequence<Element, Failure> & Sendable

        init(_ sequence: any AsyncSequence<Element, Failure> & Sendable) {
            self.sequence = sequence
        }
    }

    @usableFromInline package let source: Source

    /// Wraps any sendable async sequence.
    public init<Wrapped: AsyncSequence<Element, Failure> & Sendable>(wrapping sequence: Wrapped) {
        source = .sequence(WrappedSequence(sequence))
    }

    /// The elements `next` returns, until it returns nil.
    @usableFromInline
    package init(next: @escaping Next) {
        self.init(source: .next(next))
    }

    private init(source: Source) {
        self.source = source
    }

    /// The rest of a sequence whose iterator has read some of it: what a handler that read
    /// the first request itself hands on (to ``delivering(to:while:)``, say).
    public init(remainderOf iterator: AsyncIterator) {
        if let source = iterator.source {
            self.init(source: source)
        } else {
            self.init(wrapping: IteratorSequence(iterator: iterator))
        }
    }

    /// Reads the sequence's elements.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// A wrapped sequence's iterator.
        @usableFromInline var iterator: (any AsyncIteratorProtocol<Element, Failure>)?
        /// Set when `iterator` is not; never `.sequence`.
        @usableFromInline let source: Source?

        @usableFromInline
        init(iterator: (any AsyncIteratorProtocol<Element, Failure>)?, source: Source?) {
            self.iterator = iterator
            self.source = source
        }

        /// The next element, waiting for one; nil at the end; throws the stream's failure.
        @inlinable
        public mutating func next() async throws(Failure) -> Element? {
            try await next(isolation: nil)
        }

        /// Inlinable: compiled into the handler's module for its message type, reading a
        /// message allocates nothing on the task for generic values.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
            switch source {
            case .stream(let stream)?:
                // A stream source exists only where Failure is `any Error` (init(stream:)). Its
                // iterator takes the transports' parts to specialized code from generic code.
                var parts = stream.makeAsyncIterator()
                do { return try await parts.next(isolation: actor) } catch { throw error as! Failure }
            case .decoding(let messages)?:
                // Like a stream source, only where Failure is `any Error` (init(parts:checks:deserialize:)).
                do { return try await messages.next() } catch { throw error as! Failure }
            case .next(let next)?:
                return try await next()
            case .sequence?, nil:
                return try await iterator!.next(isolation: actor)
            }
        }
    }

    /// Makes an iterator; iterators of an RPC's stream all read the same source, so read each stream with one.
    public func makeAsyncIterator() -> AsyncIterator {
        if case .sequence(let wrapped) = source {
            AsyncIterator(iterator: wrapped.sequence.makeAsyncIterator(), source: nil)
        } else {
            AsyncIterator(iterator: nil, source: source)
        }
    }
}

extension RPCAsyncSequence where Failure == any Error {
    /// The elements of a transport's stream.
    package init(stream: BufferedStream<Element>) {
        self.init(source: .stream(stream))
    }

    /// A server's request messages, decoded from a transport's request parts.
    @usableFromInline
    package init(
        parts: BufferedStream<RPCRequestPart>, checks: RequestMessageChecks,
        deserialize: @escaping RequestMessages<Element>.Deserialize
    ) {
        self.init(source: .decoding(RequestMessages(parts: parts, checks: checks, deserialize: deserialize)))
    }
}

/// A server's request messages: the transport's parts, what each message is checked against,
/// and how it is deserialized. One reference in ``RPCAsyncSequence/Source``, which every
/// handler's sequence and iterator hold. The checks are kept here, not captured, so that the
/// closure captures only the deserializer: usually an empty value, so no context to allocate.
@usableFromInline
package final class RequestMessages<Element>: Sendable {
    @usableFromInline package typealias Deserialize = @Sendable (RPCRequestPart, RequestMessageChecks) throws -> Element

    @usableFromInline let parts: BufferedStream<RPCRequestPart>
    @usableFromInline let checks: RequestMessageChecks
    @usableFromInline let deserialize: Deserialize

    @usableFromInline
    init(parts: BufferedStream<RPCRequestPart>, checks: RequestMessageChecks, deserialize: @escaping Deserialize) {
        self.parts = parts
        self.checks = checks
        self.deserialize = deserialize
    }

    /// One part as a message.
    @inlinable
    func decode(_ part: RPCRequestPart) throws -> Element {
        try deserialize(part, checks)
    }

    /// The next message. Compiled for the handler's message type, but a call of its own: inlined
    /// into the iterator's `next`, its values made that frame, which every waiting handler
    /// holds, large enough to cost an idle stream another task-allocator slab.
    @inlinable @inline(never)
    nonisolated(nonsending) func next() async throws -> Element? {
        try await parts.nextPart().map(decode)
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
@usableFromInline
struct MappedSequence<Base: AsyncSequence & Sendable, Element: Sendable>: AsyncSequence, Sendable {
    let base: Base
    let transform: @Sendable (Base.Element) throws -> Element?

    @usableFromInline
    init(base: Base, transform: @escaping @Sendable (Base.Element) throws -> Element?) {
        self.base = base
        self.transform = transform
    }

    @usableFromInline
    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let transform: @Sendable (Base.Element) throws -> Element?

        @usableFromInline
        mutating func next() async throws -> Element? {
            try await next(isolation: nil)
        }

        /// Skips elements the transform maps to nil.
        @usableFromInline
        mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
            while let element = try await base.next(isolation: actor) {
                if let mapped = try transform(element) { return mapped }
            }
            return nil
        }
    }

    @usableFromInline
    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), transform: transform)
    }
}
