import PitlaneCore
import Synchronization

/// Live fan-out of committed updates to the watchers of each order. `OrderLog.publish` hands
/// each update over after its commit, in log order; every subscription of that order queues
/// it. A watcher subscribes *before* it reads its backlog from the log, so nothing committed
/// in between is missed; it drops what it already sent by sequence number.
public final class OrderFeed: Sendable {
    private let subscriptions = Mutex<[String: [ObjectIdentifier: Mailbox<LoggedUpdate>]]>([:])
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
    let mailbox: Mailbox<LoggedUpdate>

    init(orderID: String, bufferLimit: Int) {
        self.orderID = orderID
        mailbox = Mailbox(limit: bufferLimit) { limit in
            RPCError(code: .resourceExhausted,
                     message: "the watcher fell more than \(limit) updates behind; resume from the last update id it applied")
        }
    }

    /// The next queued update without waiting: nil when none is queued.
    func poll() -> LoggedUpdate? { mailbox.poll() }

    /// The next update, waiting for one; nil once finished.
    public func next() async throws -> LoggedUpdate? { try await mailbox.next() }
}

/// A bounded queue with one reader: producers `offer` without waiting; once more than `limit`
/// elements wait, the queue is emptied and the reader gets the `overflow` error — a consumer
/// too slow to keep up is ended with a clear status instead of growing memory or silently
/// missing elements. Shared by the order feed and the chat rooms.
public final class Mailbox<Element: Sendable>: Sendable {
    public enum End: Sendable {
        case finished
        case failed(any Error)
    }

    private struct State {
        var queue = Deque<Element>()
        var waiter: CheckedContinuation<Element?, any Error>?
        var end: End?
    }

    private let limit: Int
    private let overflow: @Sendable (Int) -> any Error
    private let state = Mutex(State())

    public init(limit: Int, overflow: @escaping @Sendable (_ limit: Int) -> any Error) {
        self.limit = limit
        self.overflow = overflow
    }

    /// Queues `element`; false if the mailbox has ended (now or earlier).
    @discardableResult
    public func offer(_ element: Element) -> Bool {
        let (waiter, accepted): (CheckedContinuation<Element?, any Error>?, Bool) = state.withLock { state in
            guard state.end == nil else { return (nil, false) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, true)
            }
            state.queue.append(element)
            if state.queue.count > limit {
                state.queue.removeAll()
                state.end = .failed(overflow(limit))
                return (nil, false)
            }
            return (nil, true)
        }
        waiter?.resume(returning: element)
        return accepted
    }

    /// Ends the mailbox once queued elements are read.
    public func end(_ end: End) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = end
            defer { state.waiter = nil }
            return state.waiter
        }
        switch end {
        case .finished: waiter?.resume(returning: nil)
        case .failed(let error): waiter?.resume(throwing: error)
        }
    }

    /// The next queued element without waiting: nil when none is queued.
    public func poll() -> Element? {
        state.withLock { $0.queue.popFirst() }
    }

    /// The next element, waiting for one; nil once finished; the error once failed.
    public func next() async throws -> Element? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let result: Result<Element?, any Error>? = state.withLock { state in
                    if let next = state.queue.popFirst() { return .success(next) }
                    switch state.end {
                    case .finished: return .success(nil)
                    case .failed(let error): return .failure(error)
                    case nil:
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state.waiter = continuation
                        return nil
                    }
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            state.withLock { state in defer { state.waiter = nil }; return state.waiter }?.resume(throwing: CancellationError())
        }
    }
}
