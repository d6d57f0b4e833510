/// One subscriber's updates of one key after a position, each exactly once and in order: the
/// backlog from the log, then live updates as they are committed — the stream a server
/// streaming RPC writes out.
///
/// It subscribes before it reads the backlog, so the switch-over has no gap, and drops what it
/// already sent by sequence number, so it has no duplicate. A live update that arrives after a
/// gap (another replica committed updates that were announced only by the newest) is preceded
/// by the gap, read from the log; so is everything after ``FeedSignal/fellBehind``.
///
/// ```swift
/// let start = try await log.start(of: orderID, after: request.message.sinceUpdateID)
/// try await FeedStream(log: log, key: orderID).run(after: start) { entry in
///     try await writer.write(OrderUpdate(entry))
/// }
/// ```
public struct FeedStream: Sendable {
    /// The log read from and subscribed to.
    public let log: FeedLog
    /// The key followed.
    public let key: String
    /// The name the subscriber is present under, if any.
    public let member: String?

    /// Follows `key` of `log`, present as `member`.
    public init(log: FeedLog, key: String, member: String? = nil) {
        self.log = log
        self.key = key
        self.member = member
    }

    /// Sends every update after sequence `start` (from ``FeedLog/start(of:after:)``) until the
    /// subscription ends: returns when it is unsubscribed, throws what ends it otherwise.
    ///
    /// - Parameters:
    ///   - start: The last sequence the subscriber has (0: none).
    ///   - send: Called with each update in order; what it throws ends the stream.
    ///   - caughtUp: Called with the last sequence sent whenever nothing more is waiting,
    ///     before the stream waits for the next update (a service that skips some updates
    ///     tells its client the position there). Default: nothing.
    public func run(
        after start: Int64, send: (FeedLog.Entry) async throws -> Void,
        caughtUp: (_ through: Int64) async throws -> Void = { _ in }
    ) async throws {
        let subscription = log.subscribers.subscribe(to: key, as: member)
        defer { log.subscribers.unsubscribe(subscription) }
        var handled = start
        try await sendFromLog(after: &handled, before: .max, send: send)
        while true {
            let signal: FeedSignal<FeedLog.Entry>
            if let buffered = subscription.poll() {
                signal = buffered
            } else {
                try await caughtUp(handled)
                guard let next = try await subscription.next() else { return }
                signal = next
            }
            switch signal {
            case .fellBehind:
                try await sendFromLog(after: &handled, before: .max, send: send)
            case .update(let entry):
                guard entry.sequence > handled else { continue }
                try await sendFromLog(after: &handled, before: entry.sequence, send: send)
                try await send(entry)
                handled = entry.sequence
            }
        }
    }

    /// Sends the log's updates after `handled` and before `before`, page by page, until there
    /// are none.
    private func sendFromLog(after handled: inout Int64, before: Int64, send: (FeedLog.Entry) async throws -> Void) async throws {
        while handled + 1 < before {
            let page = try await log.entries(of: key, after: handled).prefix { $0.sequence < before }
            guard !page.isEmpty else { return }
            for entry in page {
                try await send(entry)
                handled = entry.sequence
            }
        }
    }
}
