import PitlaneCore
import PitlaneLive
import Synchronization

/// Live fan-out of committed updates to the watchers of each order. `OrderLog.publish` hands
/// each update over after its commit, in log order; every subscription of that order queues
/// it. A watcher subscribes *before* it reads its backlog from the log, so nothing committed
/// in between is missed; it drops what it already sent by sequence number.
public final class OrderFeed: Sendable {
    private let subscriptions = Mutex<[String: [ObjectIdentifier: BoundedMailbox<LoggedUpdate>]]>([:])
    private let isShutDown = Atomic(false)

    /// Live updates a subscription may queue before its watcher is ended as too slow.
    public let bufferLimit: Int

    public init(bufferLimit: Int = 1_024) {
        self.bufferLimit = bufferLimit
    }

    /// Starts queueing the live updates of `orderID`.
    public func subscribe(to orderID: String) -> OrderSubscription {
        let subscription = OrderSubscription(orderID: orderID, bufferLimit: bufferLimit)
        subscriptions.withLock { $0[orderID, default: [:]][ObjectIdentifier(subscription.mailbox)] = subscription.mailbox }
        if isShutDown.load(ordering: .acquiring) { subscription.mailbox.end(.failed(Self.shutdownError)) }
        return subscription
    }

    public func unsubscribe(_ subscription: OrderSubscription) {
        subscriptions.withLock { all in
            all[subscription.orderID]?[ObjectIdentifier(subscription.mailbox)] = nil
            if all[subscription.orderID]?.isEmpty == true { all[subscription.orderID] = nil }
        }
    }

    /// Queues a committed update for every subscription of its order.
    public func deliver(_ update: LoggedUpdate, for orderID: String) {
        let receivers = subscriptions.withLock { $0[orderID].map { Array($0.values) } ?? [] }
        for mailbox in receivers { mailbox.offer(update) }
    }

    /// The orders someone watches now.
    public var watchedOrders: [String] {
        subscriptions.withLock { Array($0.keys) }
    }

    /// Watchers of every order, for metrics.
    public var watcherCount: Int {
        subscriptions.withLock { $0.values.reduce(0) { $0 + $1.count } }
    }

    /// How many watchers the order has now.
    public func subscriberCount(of orderID: String) -> Int {
        subscriptions.withLock { $0[orderID]?.count ?? 0 }
    }

    /// Ends every subscription with `.unavailable`, now and for later subscribers: the server is
    /// shutting down.
    public func shutdown() {
        isShutDown.store(true, ordering: .releasing)
        let all = subscriptions.withLock { all in
            defer { all.removeAll() }
            return all.values.flatMap(\.values)
        }
        for mailbox in all { mailbox.end(.failed(Self.shutdownError)) }
    }

    static let shutdownError = RPCError(code: .unavailable, message: "the server is shutting down; resume from your last update id")
}

/// One watcher's queue of live updates: bounded, so a watcher that stops reading costs at most
/// the feed's `bufferLimit` updates of memory and is then ended with `.resourceExhausted`.
public struct OrderSubscription: Sendable {
    let orderID: String
    let mailbox: BoundedMailbox<LoggedUpdate>

    init(orderID: String, bufferLimit: Int) {
        self.orderID = orderID
        mailbox = Mailbox(limit: bufferLimit) { limit in
            FeedError.subscriberTooSlow(limit: limit, names: OrderErrors.names).rpcError
        }
    }

    /// The next queued update without waiting: nil when none is queued.
    func poll() -> LoggedUpdate? { mailbox.poll() }

    /// The next update, waiting for one; nil once finished.
    public func next() async throws -> LoggedUpdate? { try await mailbox.next() }
}
