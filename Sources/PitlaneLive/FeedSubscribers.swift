import PitlaneCore
import Synchronization

/// An update of a feed: numbered within its key.
public protocol FeedUpdate: Sendable {
    /// Its number in its key's order, from 1.
    var sequence: Int64 { get }
}

extension FeedLog.Entry: FeedUpdate {}

/// What a subscription's reader gets next.
public enum FeedSignal<Update: FeedUpdate>: Sendable {
    /// The next update.
    case update(Update)
    /// The subscriber fell more than its buffer behind and updates were dropped; read what
    /// was missed from the log (``FeedStream`` does), or skip to the newest (an ephemeral feed).
    case fellBehind
}

/// What happens to a subscriber of a ``FeedBuffer`` whose buffer is full when another update comes.
public enum FeedOverflow: Sendable {
    /// Its buffer is emptied and it reads ``FeedSignal/fellBehind`` next.
    case catchUp
    /// Its subscription ends with ``FeedError/Reason/subscriberTooSlow``.
    case end
}

/// This process's subscribers of a feed, by key: each update goes to every subscription of
/// its key, into a buffer of the subscription's own that decides what waits for its reader.
///
/// A durable feed's subscribers (``FeedLog/Subscribers``) buffer with ``FeedBuffer``: at most
/// a limit, then the ``FeedOverflow`` policy — the subscriber catches up from the log, or its
/// subscription ends with ``FeedError/Reason/subscriberTooSlow`` (`RESOURCE_EXHAUSTED` with
/// `RetryInfo`). An ephemeral feed (positions at 10 Hz) gives each subscription a buffer of its
/// own kind (the latest position wins, say). Either way a subscriber that never reads costs at
/// most its buffer.
///
/// Subscriptions may name a member (a nickname, a user): ``members(of:)`` is the presence of
/// a key on this replica, gone when the subscription is.
public final class FeedSubscribers<Buffer: MailboxBuffer>: Sendable {
    private struct State: ~Copyable {
        var byKey: [String: [ObjectIdentifier: FeedSubscription<Buffer>]] = [:]
        var shutdown: (any Error)?
    }

    private let makeBuffer: @Sendable () -> Buffer
    private let state = Mutex(State())

    /// Subscribers whose subscriptions buffer in what `makeBuffer` makes, unless they bring their own.
    public init(makeBuffer: @escaping @Sendable () -> Buffer) {
        self.makeBuffer = makeBuffer
    }

    /// Subscribers that buffer `bufferLimit` updates each, then meet `overflow`; `names` words
    /// the errors.
    public convenience init<Update>(bufferLimit: Int = 1_024, overflow: FeedOverflow = .catchUp, names: FeedNames)
    where Buffer == FeedBuffer<Update> {
        precondition(bufferLimit > 0, "a subscription buffers at least one update")
        self.init { FeedBuffer(limit: bufferLimit, overflow: overflow, names: names) }
    }

    /// Starts buffering the updates of `key` in `buffer` (default: a new one of the
    /// subscribers' kind), present as `member` (if given) until ``unsubscribe(_:)``.
    public func subscribe(to key: String, as member: String? = nil, buffer: Buffer? = nil) -> FeedSubscription<Buffer> {
        let subscription = FeedSubscription<Buffer>(key: key, member: member, buffer: buffer ?? makeBuffer())
        let shutdown = state.withLock { state in
            if state.shutdown == nil { state.byKey[key, default: [:]][ObjectIdentifier(subscription)] = subscription }
            return state.shutdown
        }
        if let shutdown { subscription.mailbox.end(.failed(shutdown)) }
        return subscription
    }

    /// Stops `subscription`: it gets nothing more, its reader ends once it has read what is
    /// buffered, and its member leaves the key's presence.
    public func unsubscribe(_ subscription: FeedSubscription<Buffer>) {
        state.withLock { state in
            state.byKey[subscription.key]?[ObjectIdentifier(subscription)] = nil
            if state.byKey[subscription.key]?.isEmpty == true { state.byKey[subscription.key] = nil }
        }
        subscription.mailbox.end(.finished)
    }

    /// Hands `update` to every subscription of `key`.
    @inlinable public func deliver(_ update: Buffer.Input, for key: String) {
        for subscription in subscriptions(of: key) { subscription.mailbox.offer(update) }
    }

    /// The subscriptions of `key` now.
    public func subscriptions(of key: String) -> [FeedSubscription<Buffer>] {
        state.withLock { $0.byKey[key].map { Array($0.values) } ?? [] }
    }

    /// Ends every subscription of `key` (the key is over: a race finished) or, with `failing`,
    /// fails them; each reader ends once it has read what is buffered.
    public func end(_ key: String, failing error: (any Error)? = nil) {
        let ended = state.withLock { $0.byKey.removeValue(forKey: key).map { Array($0.values) } ?? [] }
        for subscription in ended { subscription.mailbox.end(error.map { .failed($0) } ?? .finished) }
    }

    /// The keys with subscribers now.
    public var keys: [String] { state.withLock { Array($0.byKey.keys) } }

    /// Subscriptions of every key.
    public var count: Int { state.withLock { $0.byKey.values.reduce(0) { $0 + $1.count } } }

    /// Subscriptions of `key`.
    public func count(of key: String) -> Int { state.withLock { $0.byKey[key]?.count ?? 0 } }

    /// Who is subscribed to `key` here under a name, sorted (a name subscribed twice is listed twice).
    public func members(of key: String) -> [String] {
        state.withLock { ($0.byKey[key] ?? [:]).values.compactMap(\.member) }.sorted()
    }

    /// Ends every subscription with `error`, now and for later subscribers: the server is
    /// shutting down.
    public func shutdown(_ error: any Error) {
        let all = state.withLock { state in
            state.shutdown = error
            defer { state.byKey.removeAll() }
            return state.byKey.values.flatMap(\.values)
        }
        for subscription in all { subscription.mailbox.end(.failed(error)) }
    }
}

/// One subscriber's buffered updates of one key, read by one reader.
public final class FeedSubscription<Buffer: MailboxBuffer>: Sendable {
    /// The key subscribed to.
    public let key: String
    /// The name it is present under, if any.
    public let member: String?
    /// Where its updates wait.
    public let mailbox: Mailbox<Buffer>

    init(key: String, member: String?, buffer: Buffer) {
        self.key = key
        self.member = member
        mailbox = Mailbox(buffer)
    }

    /// The next buffered element without waiting: nil when none is buffered.
    public func poll() -> Buffer.Output? { mailbox.poll() }

    /// The next element, waiting for one; nil once unsubscribed or ended.
    ///
    /// - Throws: the buffer's error (a ``FeedBuffer``'s ``FeedError/Reason/subscriberTooSlow``),
    ///   the shutdown error, `CancellationError`.
    public func next() async throws -> Buffer.Output? { try await mailbox.next() }
}

/// A durable feed's subscription buffer: first in, first out, at most `limit` updates; past
/// that, the ``FeedOverflow`` policy.
public struct FeedBuffer<Update: FeedUpdate>: MailboxBuffer {
    private var queue = Deque<Update>()
    private let limit: Int
    private let overflow: FeedOverflow
    private let names: FeedNames
    /// Updates were dropped; the reader is told before anything else, and until it is, more are dropped.
    private var behind = false

    /// A buffer of at most `limit` updates, then `overflow`; `names` words the error.
    public init(limit: Int, overflow: FeedOverflow, names: FeedNames) {
        self.limit = limit
        self.overflow = overflow
        self.names = names
    }

    /// Buffers `update`, or drops it while the reader has not been told it fell behind; past
    /// the limit, empties the buffer and applies the policy.
    public mutating func append(_ update: Update) -> (any Error)? {
        guard !behind else { return nil }
        queue.append(update)
        guard queue.count > limit else { return nil }
        queue.removeAll()
        switch overflow {
        case .catchUp:
            behind = true
            return nil
        case .end:
            return FeedError.subscriberTooSlow(limit: limit, names: names)
        }
    }

    /// ``FeedSignal/fellBehind`` first if updates were dropped, then the oldest update.
    public mutating func removeNext() -> FeedSignal<Update>? {
        if behind {
            behind = false
            return .fellBehind
        }
        return queue.popFirst().map { .update($0) }
    }
}
