import Synchronization

/// How a ``Mailbox`` keeps what waits for its reader: a bounded first-in first-out queue
/// (``BoundedQueue``), or a policy of a service's own (latest positions win, say).
public protocol MailboxBuffer: Sendable {
    /// The type producers offer.
    associatedtype Input: Sendable
    /// The type the reader receives.
    associatedtype Output: Sendable

    /// Takes `input` in (or drops it, if the policy says so). An error ends the mailbox at
    /// once: the reader is too far behind, and the buffer has emptied itself.
    mutating func append(_ input: Input) -> (any Error)?

    /// The next element for the reader, if one waits.
    mutating func removeNext() -> Output?
}

/// What a ``Mailbox`` hands its elements to when no task reads it (a stream's response, a
/// socket's queue): see ``Mailbox/deliver(to:)``.
public protocol MailboxConsumer<Buffer>: AnyObject, Sendable {
    /// The buffer of the mailbox consumed.
    associatedtype Buffer: MailboxBuffer

    /// Takes `element` now, or refuses it (the consumer is behind): it is offered again first
    /// after ``Mailbox/resumeDelivery()``. Called by producers under the mailbox's lock: it
    /// must neither wait nor call back into the mailbox.
    func take(_ element: Buffer.Output) -> Bool

    /// The mailbox ended and everything it held was taken, or delivery stopped: how. Once.
    func mailboxEnded(_ end: Mailbox<Buffer>.End)
}

/// One reader and any number of producers that never wait: they `offer`, the buffer decides
/// what to keep, and a reader too slow for its buffer is ended with the buffer's error rather
/// than growing memory or silently missing elements.
///
/// The reader is a task that iterates it, or a consumer that takes elements at once and needs
/// no task while it waits (a socket's queue): ``deliver(to:)``.
///
/// Inlinable: a service's mailbox (its own buffer type, in its own module) is specialized
/// there, so offering and reading cost no type-metadata lookups per element (unspecialized,
/// they were an eighth of swiftkart-server's time with 5,000 followers).
public final class Mailbox<Buffer: MailboxBuffer>: AsyncSequence, Sendable {
    /// The type the reader receives, the buffer's output.
    public typealias Element = Buffer.Output

    /// How a mailbox ends, once its buffered elements are read.
    public enum End: Sendable {
        /// Cleanly: iteration ends.
        case finished
        /// With an error, which the reader's next read throws.
        case failed(any Error)
    }

    @usableFromInline struct State {
        @usableFromInline var buffer: Buffer
        @usableFromInline var waiter: UnsafeContinuation<Buffer.Output?, any Error>?
        @usableFromInline var end: End?
        /// While the reader waits in ``forward(trying:write:)``: where `offer` hands elements
        /// straight away.
        @usableFromInline var direct: (@Sendable (Buffer.Output) -> Bool)?
        /// The consumer of ``deliver(to:)``, instead of a reader.
        @usableFromInline var sink: Sink?

        @usableFromInline init(buffer: Buffer) {
            self.buffer = buffer
        }

        @inlinable mutating func takeWaiter() -> UnsafeContinuation<Buffer.Output?, any Error>? {
            defer {
                waiter = nil
                direct = nil
            }
            return waiter
        }

        /// Hands buffered elements to the sink until it refuses one, which it is offered again
        /// first when delivery resumes.
        @inlinable mutating func feedSink() {
            guard sink != nil, sink!.refused == nil else { return }
            while let next = buffer.removeNext() {
                guard sink!.consumer.take(next) else {
                    sink!.refused = next
                    return
                }
            }
        }

        /// The sink, once the mailbox has ended and the sink has taken everything (or at once,
        /// when `dropping`): to be told, and dropped.
        @inlinable mutating func takeEndedSink(dropping: Bool = false) -> (any MailboxConsumer<Buffer>, End)? {
            guard let end, let sink, dropping || sink.refused == nil else { return nil }
            self.sink = nil
            while buffer.removeNext() != nil {}
            return (sink.consumer, end)
        }

        /// Hands buffered elements to the waiting reader's `direct` while it takes them; the
        /// first it refuses goes to the reader itself (with the waiter to resume).
        @inlinable mutating func handOverDirectly(
            _ direct: @Sendable (Buffer.Output) -> Bool
        ) -> (UnsafeContinuation<Buffer.Output?, any Error>, Result<Buffer.Output?, any Error>)? {
            while let next = buffer.removeNext() {
                if direct(next) { continue }
                return takeWaiter().map { ($0, .success(next)) }
            }
            return nil
        }
    }

    /// The consumer of ``deliver(to:)``, and what it refused.
    @usableFromInline struct Sink {
        @usableFromInline let consumer: any MailboxConsumer<Buffer>
        /// The element the consumer refused, offered first when delivery resumes.
        @usableFromInline var refused: Buffer.Output?

        @usableFromInline init(consumer: any MailboxConsumer<Buffer>) {
            self.consumer = consumer
        }
    }

    @usableFromInline let state: Mutex<State>

    /// Creates a mailbox that keeps what waits for its reader in `buffer`.
    public init(_ buffer: Buffer) {
        state = Mutex(State(buffer: buffer))
    }

    /// Hands `input` to the buffer (and on to a waiting reader); false if the mailbox has ended,
    /// now or earlier.
    @discardableResult @inlinable
    public func offer(_ input: Buffer.Input) -> Bool {
        let (resumption, accepted, ended) = state.withLock {
            state -> (
                (UnsafeContinuation<Buffer.Output?, any Error>, Result<Buffer.Output?, any Error>)?, Bool,
                (any MailboxConsumer<Buffer>, End)?
            ) in
            guard state.end == nil else { return (nil, false, nil) }
            if let overflow = state.buffer.append(input) {
                state.end = .failed(overflow)
                return (state.takeWaiter().map { ($0, .failure(overflow)) }, false, state.takeEndedSink(dropping: true))
            }
            if let direct = state.direct { return (state.handOverDirectly(direct), true, nil) }
            if state.sink != nil {
                state.feedSink()
                return (nil, true, nil)
            }
            guard state.waiter != nil, let next = state.buffer.removeNext() else { return (nil, true, nil) }
            return (state.takeWaiter().map { ($0, .success(next)) }, true, nil)
        }
        if let (waiter, result) = resumption { waiter.resume(with: result) }
        if let (consumer, end) = ended { consumer.mailboxEnded(end) }
        return accepted
    }

    /// Changes the buffer in place, under the mailbox's lock (a new filter, say).
    @inlinable public func withBuffer<T>(_ body: (inout Buffer) -> T) -> T {
        state.withLock { body(&$0.buffer) }
    }

    /// Ends the mailbox once the buffered elements are read.
    @inlinable public func end(_ end: End) {
        let (waiter, sink) = state.withLock {
            state -> (UnsafeContinuation<Buffer.Output?, any Error>?, (any MailboxConsumer<Buffer>, End)?) in
            guard state.end == nil else { return (nil, nil) }
            state.end = end
            return (state.takeWaiter(), state.takeEndedSink())
        }
        if let (consumer, end) = sink { consumer.mailboxEnded(end) }
        switch end {
        case .finished: waiter?.resume(returning: nil)
        case .failed(let error): waiter?.resume(throwing: error)
        }
    }

    /// Hands the buffered elements, then each one offered, to `consumer`, with no task
    /// waiting: its `take` runs in the producer's `offer`. An element it refuses (it is
    /// behind) waits, with those offered after it, in the buffer, whose policy applies as it
    /// would to a slow reader, until ``resumeDelivery()``. Once the mailbox has ended and the
    /// consumer has taken what waited (as a reader reads what is buffered before the end),
    /// it is told how, once; an overflow, or ``stopDelivery(_:)``, tells it at once.
    ///
    /// Instead of reading the mailbox: a mailbox has one consumer.
    @inlinable public func deliver(to consumer: some MailboxConsumer<Buffer>) {
        let sink = state.withLock { state -> (any MailboxConsumer<Buffer>, End)? in
            precondition(state.sink == nil && state.waiter == nil, "a mailbox has one consumer")
            state.sink = Sink(consumer: consumer)
            state.feedSink()
            return state.takeEndedSink()
        }
        if let (consumer, end) = sink { consumer.mailboxEnded(end) }
    }

    /// ``deliver(to:)`` to a consumer made of two functions: `take` takes or refuses an
    /// element, `ended` hears the end.
    @inlinable public func deliver(
        to take: @escaping @Sendable (Buffer.Output) -> Bool, ended: @escaping @Sendable (End) -> Void
    ) {
        deliver(to: ClosureConsumer(take: take, ended: ended))
    }

    /// The consumer has room again: the element it refused, and those after it, are offered
    /// to it again until it refuses one.
    @inlinable public func resumeDelivery() {
        let sink = state.withLock { state -> (any MailboxConsumer<Buffer>, End)? in
            guard let refused = state.sink?.refused, state.sink!.consumer.take(refused) else { return nil }
            state.sink!.refused = nil
            state.feedSink()
            return state.takeEndedSink()
        }
        if let (consumer, end) = sink { consumer.mailboxEnded(end) }
    }

    /// The consumer is gone (its stream was cancelled): what waits for it is dropped, the
    /// mailbox ends with `error` (unless it had ended), and the consumer hears that, unless it
    /// has heard its end.
    @inlinable public func stopDelivery(_ error: any Error) {
        let sink = state.withLock { state -> (any MailboxConsumer<Buffer>, End)? in
            if state.end == nil { state.end = .failed(error) }
            return state.takeEndedSink(dropping: true).map { ($0.0, .failed(error)) }
        }
        if let (consumer, end) = sink { consumer.mailboxEnded(end) }
    }

    /// A consumer made of two functions.
    @usableFromInline final class ClosureConsumer: MailboxConsumer {
        @usableFromInline let takeElement: @Sendable (Buffer.Output) -> Bool
        @usableFromInline let ended: @Sendable (End) -> Void

        @inlinable init(take: @escaping @Sendable (Buffer.Output) -> Bool, ended: @escaping @Sendable (End) -> Void) {
            takeElement = take
            self.ended = ended
        }

        @inlinable func take(_ element: Buffer.Output) -> Bool { takeElement(element) }
        @inlinable func mailboxEnded(_ end: End) { ended(end) }
    }

    /// The next buffered element without waiting: nil when none waits.
    @inlinable public func poll() -> Buffer.Output? {
        state.withLock { $0.buffer.removeNext() }
    }

    /// The next element, waiting for one; nil once finished; the error once failed.
    @inlinable public func next() async throws -> Buffer.Output? {
        try await next(orHandOverTo: nil)
    }

    /// Writes every element with `write` until the mailbox ends; while the reader waits, an
    /// element offered goes straight to `tryWrite`, called by the producer under the
    /// mailbox's lock, so nothing wakes the reader for an element the writer takes at once (a
    /// race tick to thousands of followers). The first element `tryWrite` refuses (the peer
    /// is behind) goes through `write`, which may wait; later ones meet the buffer's policy
    /// meanwhile, and the order holds.
    ///
    /// `tryWrite` must not wait, nor call back into this mailbox.
    /// - Throws: the buffer's error once failed; what `write` throws.
    @inlinable public func forward(
        trying tryWrite: @escaping @Sendable (Buffer.Output) -> Bool,
        write: (Buffer.Output) async throws -> Void
    ) async throws {
        while let next = try await next(orHandOverTo: tryWrite) {
            try await write(next)
        }
    }

    /// The reader's continuation is unsafe, not checked: it is resumed exactly once, by whoever
    /// takes it out of the state under the lock (an offer, the end, or the cancellation), and a
    /// checked one is a heap object per wait, alive as long as a follower waits.
    @inlinable func next(orHandOverTo direct: (@Sendable (Buffer.Output) -> Bool)?) async throws -> Buffer.Output? {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                let result: Result<Buffer.Output?, any Error>? = state.withLock { state in
                    // What waited in the buffer (offered before the reader came, or while the
                    // writer was behind) goes to `direct` first, as an offer would.
                    while let next = state.buffer.removeNext() {
                        if let direct, direct(next) { continue }
                        return .success(next)
                    }
                    switch state.end {
                    case .finished: return .success(nil)
                    case .failed(let error): return .failure(error)
                    case nil:
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state.waiter = continuation
                        state.direct = direct
                        return nil
                    }
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            state.withLock { $0.takeWaiter() }?.resume(throwing: CancellationError())
        }
    }

    /// Reads the mailbox's elements; see ``Mailbox/next()``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        @usableFromInline let mailbox: Mailbox
        @usableFromInline init(mailbox: Mailbox) { self.mailbox = mailbox }
        /// The next element, waiting for one; nil once finished; throws the error once failed, or when the task is cancelled.
        @inlinable public mutating func next() async throws -> Buffer.Output? { try await mailbox.next() }
    }

    /// Makes the mailbox's one reader.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(mailbox: self) }
}

/// A first-in first-out buffer of at most `limit` elements; one more ends the mailbox with the
/// `overflow` error.
public struct BoundedQueue<Element: Sendable>: MailboxBuffer {
    private var queue = Deque<Element>()
    private let limit: Int
    private let overflow: @Sendable (_ limit: Int) -> any Error

    /// Creates an empty queue that keeps at most `limit` elements.
    ///
    /// - Parameters:
    ///   - limit: The most elements the queue keeps; the next one appended empties it and ends the mailbox.
    ///   - overflow: Makes the error the mailbox ends with, given `limit`.
    public init(limit: Int, overflow: @escaping @Sendable (_ limit: Int) -> any Error) {
        self.limit = limit
        self.overflow = overflow
    }

    /// Appends `element`; past the limit, empties the queue and returns the overflow error.
    public mutating func append(_ element: Element) -> (any Error)? {
        queue.append(element)
        guard queue.count > limit else { return nil }
        queue.removeAll()
        return overflow(limit)
    }

    /// Removes and returns the oldest element, if any.
    public mutating func removeNext() -> Element? { queue.popFirst() }
}

/// A mailbox over a bounded queue: what a service hands each subscriber.
public typealias BoundedMailbox<Element: Sendable> = Mailbox<BoundedQueue<Element>>

extension Mailbox {
    /// A mailbox that keeps at most `limit` elements; one more ends it with `overflow(limit)`.
    public convenience init<Element>(limit: Int, overflow: @escaping @Sendable (_ limit: Int) -> any Error)
    where Buffer == BoundedQueue<Element> {
        self.init(BoundedQueue(limit: limit, overflow: overflow))
    }
}
