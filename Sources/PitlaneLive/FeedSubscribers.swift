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

/// This process's subscribers of a feed, by key: each committed (or, for an ephemeral feed,
/// published) update goes to every subscription of its key, into a bounded buffer.
///
/// A subscriber that falls ``bufferLimit`` updates behind meets the feed's ``Overflow``
/// policy: its buffer is emptied and either it reads ``FeedSignal/fellBehind`` next and
/// catches up (from the log, or by skipping), or its subscription ends with
/// ``FeedError/Reason/subscriberTooSlow`` (`RESOURCE_EXHAUSTED` with `RetryInfo`). Either way a
/// subscriber that never reads costs at most its buffer.
///
/// Subscriptions may name a member (a nickname, a user): ``members(of:)`` is the presence of
/// a key on this replica, gone when the subscription is.
public final class FeedSubscribers<Update: FeedUpdate>: Sendable {
    /// What happens to a subscriber whose buffer is full when another update comes.
    public enum Overflow: Sendable {
        /// Its buffer is emptied and it reads ``FeedSignal/fellBehind`` next.
        case catchUp
        /// Its subscription ends with ``FeedError/Reason/subscriberTooSlow``.
        case end
    }

    private struct State: ~Copyable {
        var byKey: [String: [ObjectIdentifier: FeedSubscription<Update>]] = [:]
        var shutdown: (any Error)?
    }

    /// Updates a subscription may buffer.
    public let bufferLimit: Int
    /// What happens past the limit.
    public let overflow: Overflow
    private let names: FeedNames
    private let state = Mutex(State())

    /// Subscribers that buffer `bufferLimit` updates each, then meet `overflow`; `names` words
    /// the errors.
    public init(bufferLimit: Int = 1_024, overflow: Overflow = .catchUp, names: FeedNames) {
        precondition(bufferLimit > 0, "a subscription buffers at least one update")
        self.bufferLimit = bufferLimit
        self.overflow = overflow
        self.names = names
    }

    /// Starts buffering the updates of `key`, present as `member` (if given) until
    /// ``unsubscribe(_:)``.
    public func subscribe(to key: String, as member: String? = nil) -> FeedSubscription<Update> {
        let subscription = FeedSubscription<Update>(
            key: key, member: member, buffer: FeedBuffer(limit: bufferLimit, overflow: overflow, names: names))
        let shutdown = state.withLock { state in
            if state.shutdown == nil { state.byKey[key, default: [:]][ObjectIdentifier(subscription)] = subscription }
            return state.shutdown
        }
        if let shutdown { subscription.mailbox.end(.failed(shutdown)) }
        return subscription
    }

    /// Stops `subscription`: it gets nothing more and its member leaves the key's presence.
    public func unsubscribe(_ subscription: FeedSubscription<Update>) {
        state.withLock { state in
            state.byKey[subscription.key]?[ObjectIdentifier(subscription)] = nil
            if state.byKey[subscription.key]?.isEmpty == true { state.byKey[subscription.key] = nil }
        }
        subscription.mailbox.end(.finished)
    }

    /// Hands `update` to every subscription of `key`.
    public func deliver(_ update: Update, for key: String) {
        let receivers = state.withLock { $0.byKey[key].map { Array($0.values) } ?? [] }
        for subscription in receivers { subscription.mailbox.offer(update) }
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

/// One subscriber's buffered updates of one key; read with ``next()`` by one reader.
public final class FeedSubscription<Update: FeedUpdate>: Sendable {
    /// The key subscribed to.
    public let key: String
    /// The name it is present under, if any.
    public let member: String?
    let mailbox: Mailbox<FeedBuffer<Update>>

    init(key: String, member: String?, buffer: FeedBuffer<Update>) {
        self.key = key
        self.member = member
        mailbox = Mailbox(buffer)
    }

    /// The next signal without waiting: nil when none is buffered.
    public func poll() -> FeedSignal<Update>? { mailbox.poll() }

    /// The next signal, waiting for one; nil once unsubscribed.
    ///
    /// - Throws: ``FeedError`` `.subscriberTooSlow` (policy ``FeedSubscribers/Overflow/end``),
    ///   the shutdown error, `CancellationError`.
    public func next() async throws -> FeedSignal<Update>? { try await mailbox.next() }
}

/// A subscription's buffer: first in, first out, at most `limit` updates; past that, the
/// policy.
struct FeedBuffer<Update: FeedUpdate>: MailboxBuffer {
    private var queue = Deque<Update>()
    private let limit: Int
    private let overflow: FeedSubscribers<Update>.Overflow
    private let names: FeedNames
    /// Updates were dropped; the reader is told before anything else, and until it is, more are dropped.
    private var behind = false

    init(limit: Int, overflow: FeedSubscribers<Update>.Overflow, names: FeedNames) {
        self.limit = limit
        self.overflow = overflow
        self.names = names
    }

    mutating func append(_ update: Update) -> (any Error)? {
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

    mutating func removeNext() -> FeedSignal<Update>? {
        if behind {
            behind = false
            return .fellBehind
        }
        return queue.popFirst().map { .update($0) }
    }
}
