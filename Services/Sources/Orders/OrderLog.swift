import Glibc
import PitlaneCore
import PitlaneLive
import PitlaneProtobuf
import PitlaneSQL
import PitlaneSQLite
import Synchronization

public typealias OrderSnapshot = Orders_V1_OrderSnapshot
public typealias OrderUpdate = Orders_V1_OrderUpdate
public typealias OrderEvent = Orders_V1_OrderUpdate.OneOf_Event
public typealias OrderStatus = Orders_V1_OrderStatus
public typealias EventKind = Orders_V1_EventKind

/// One committed update: its sequence number in the order's log and the message clients get
/// (with its `update_id` filled in).
public struct LoggedUpdate: Sendable {
    public var sequence: Int64
    public var message: OrderUpdate

    /// The kind of its event, for FollowOrder's `include` set.
    public var kind: EventKind { message.event?.kind ?? .unspecified }
}

extension OrderEvent {
    /// The `EventKind` that selects this event.
    public var kind: EventKind {
        switch self {
        case .statusChanged: .status
        case .etaChanged: .eta
        case .courierMoved: .courier
        case .timelineEvent: .timeline
        }
    }
}

/// The durable update log of every order: each order's current state, its timeline, and its
/// recent updates numbered 1, 2, 3... in a database: an SQLite file (WAL) for one process, or
/// PostgreSQL shared by every replica. `publish` returns only after its transaction is
/// committed, so an acknowledged update survives a crash of the server.
///
/// Retention keeps at most `Retention.maxUpdatesPerOrder` updates per order, none older than
/// `Retention.maxAge`; the order remembers how far its log was pruned, so a resume from before
/// that fails with `.outOfRange` instead of silently skipping updates. The log's epoch is
/// chosen at random when the database is created and kept in it: every replica of one
/// database shares it, and tokens from another database (a reset log) are recognised.
///
/// Each committed update is announced on the database's `OrderLog.channel`, so replicas
/// that share it can wake their own watchers (`relay(to:)`); the log stays the truth.
public final class OrderLog: Sendable {
    public struct Retention: Sendable {
        /// Updates kept per order (the newest).
        public var maxUpdatesPerOrder: Int
        /// Updates older than this are dropped.
        public var maxAge: Duration

        public init(maxUpdatesPerOrder: Int = 10_000, maxAge: Duration = .seconds(7 * 24 * 3600)) {
            self.maxUpdatesPerOrder = maxUpdatesPerOrder
            self.maxAge = maxAge
        }
    }

    /// How hard an SQLite commit waits for the disk: `.full` survives power loss, `.normal`
    /// (WAL) only a crash of the process. PostgreSQL follows its own `synchronous_commit`.
    public enum Durability: String, Sendable {
        case full, normal
    }

    /// What `access` checks before a read: who owns the order.
    public struct OrderHeader: Sendable {
        public var customerID: String
        public var lastSequence: Int64
        public var prunedThrough: Int64
    }

    /// Where commits are announced to other replicas.
    public static let channel = "pitlane_orders"

    public let epoch: UInt64
    public let retention: Retention
    public let database: any SQLDatabase
    /// Tells this process's announcements from other replicas'.
    let replicaID = String(UInt64.random(in: 1 ... .max), radix: 36)
    private let queue = Mutex(PublishQueue())

    /// Opens (creating and migrating) an SQLite log at `path`; `":memory:"` for a private one.
    public convenience init(path: String, retention: Retention = Retention(), durability: Durability = .full) throws {
        try self.init(database: SQLiteStore(path: path, synchronous: durability.rawValue.uppercased()), retention: retention)
    }

    /// Opens (creating and migrating) the log in `database`.
    public init(database: any SQLDatabase, retention: Retention = Retention()) throws {
        self.database = database
        self.retention = retention
        epoch = try database.withConnection { connection in
            try Self.schema.apply(to: connection, legacyVersion: SchemaMigrations.sqliteUserVersion) { connection in
                var epoch: UInt64 = 0
                while epoch == 0 { epoch = UInt64.random(in: .min ... .max) }
                try connection.run(
                    "INSERT INTO log_meta (key, value) VALUES ('epoch', ?) ON CONFLICT (key) DO NOTHING",
                    .integer(Int64(bitPattern: epoch)))
            }
            guard let stored = try connection.first("SELECT value FROM log_meta WHERE key = 'epoch'", as: { $0.int64(at: 0) }) else {
                throw DatabaseError(.other, message: "the update log has no epoch")
            }
            return UInt64(bitPattern: stored)
        }
    }

    // MARK: Orders

    /// Creates an order; `.alreadyExists` when the id is taken.
    public func createOrder(id: String, customerID: String, etaDisplay: String) async throws -> OrderSnapshot {
        try await database.transaction { [self] connection in
            let created = try connection.first(
                """
                INSERT INTO orders (id, customer_id, status, eta_display, created_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, .text(id), .text(customerID), .int(OrderStatus.received.rawValue), .text(etaDisplay), .integer(Self.nowNanoseconds()),
                as: { _ in true })
            guard created == true else { throw RPCError(code: .alreadyExists, message: "order '\(id)' already exists") }
            return try snapshot(of: id, in: connection)!
        }
    }

    /// Up to `limit` orders, newest first: `customerID`'s, or every order when it is nil.
    public func orders(of customerID: String?, limit: Int) async throws -> [Orders_V1_OrderSummary] {
        try await database.withConnection { connection in
            let columns = "SELECT id, customer_id, status, eta_display FROM orders"
            let order = "ORDER BY created_at DESC, id LIMIT ?"
            let summary: (any SQLRow) throws -> Orders_V1_OrderSummary = { row in
                .with {
                    $0.orderID = row.text(at: 0)
                    $0.customerID = row.text(at: 1)
                    $0.status = OrderStatus(rawValue: row.int(at: 2)) ?? .unspecified
                    $0.etaDisplay = row.text(at: 3)
                }
            }
            if let customerID {
                return try connection.all("\(columns) WHERE customer_id = ? \(order)", .text(customerID), .int(limit), as: summary)
            }
            return try connection.all("\(columns) \(order)", .int(limit), as: summary)
        }
    }

    /// Who owns `orderID` and where its log stands; nil when there is no such order.
    public func header(of orderID: String) async throws -> OrderHeader? {
        try await database.withConnection { try Self.header(of: orderID, in: $0) }
    }

    /// The order's current state with the position of its latest update; nil when unknown.
    public func snapshot(of orderID: String) async throws -> OrderSnapshot? {
        try await database.withConnection { [self] in try snapshot(of: orderID, in: $0) }
    }

    // MARK: Updates

    /// Appends `event` to the order's log, applies it to the order's state and prunes what
    /// retention no longer keeps; returns once that is committed. After the commit (and still
    /// in log order) hands the update to `afterCommit`.
    ///
    /// Concurrent publishes share commits (group commit): while one transaction commits, the
    /// next publishes queue up and go into one transaction together — one disk sync for all of
    /// them. Each runs under its own savepoint, so one failing (`.notFound`) fails alone; the
    /// database failing fails them all (`.unavailable`), and none is acknowledged.
    public func publish(
        _ event: OrderEvent, to orderID: String,
        afterCommit: @escaping @Sendable (LoggedUpdate) -> Void = { _ in }
    ) async throws -> LoggedUpdate {
        try await withCheckedThrowingContinuation { continuation in
            let leads = queue.withLock { queue in
                queue.pending.append(PendingPublish(event: event, orderID: orderID, afterCommit: afterCommit, continuation: continuation))
                defer { queue.isCommitting = true }
                return !queue.isCommitting
            }
            if leads { database.perform { self.commitQueued() } }
        }
    }

    private struct PendingPublish {
        var event: OrderEvent
        var orderID: String
        var afterCommit: @Sendable (LoggedUpdate) -> Void
        var continuation: CheckedContinuation<LoggedUpdate, any Error>
    }

    private struct PublishQueue {
        var pending: [PendingPublish] = []
        /// A publisher is committing; it takes whatever queues up meanwhile.
        var isCommitting = false
    }

    /// Commits batches until the queue is empty, then steps down. Blocks: runs where the
    /// database may block (`SQLDatabase.perform`).
    private func commitQueued() {
        while true {
            let arrived: [PendingPublish] = queue.withLock { queue in
                defer { queue.pending.removeAll() }
                if queue.pending.isEmpty { queue.isCommitting = false }
                return queue.pending
            }
            guard !arrived.isEmpty else { return }
            // Orders in one sequence (arrival order within each): replicas committing batches
            // at once lock their orders' rows in the same order, so they never deadlock.
            let batch = arrived.enumerated().sorted { ($0.element.orderID, $0.offset) < ($1.element.orderID, $1.offset) }.map(\.element)
            var results: [Result<LoggedUpdate, any Error>] = []
            do {
                try database.withConnection { connection in
                    try connection.transaction {
                        results = []
                        for request in batch {
                            results.append(try publishUnderSavepoint(request, in: connection))
                        }
                    }
                    // Delivered in log order, before the next batch can commit.
                    for (request, result) in zip(batch, results) {
                        if case .success(let logged) = result { request.afterCommit(logged) }
                    }
                }
            } catch {
                results = batch.map { _ in .failure(error) }
            }
            for (request, result) in zip(batch, results) { request.continuation.resume(with: result) }
        }
    }

    /// One publish inside the batch's transaction: its own failure is its result; the
    /// database's failure is thrown (it ends the transaction).
    private func publishUnderSavepoint(
        _ request: PendingPublish, in connection: any SQLConnection
    ) throws -> Result<LoggedUpdate, any Error> {
        try connection.execute("SAVEPOINT publish")
        do {
            let logged = try append(request.event, to: request.orderID, in: connection)
            try connection.execute("RELEASE publish")
            return .success(logged)
        } catch let error as RPCError {
            try connection.execute("ROLLBACK TO publish; RELEASE publish")
            return .failure(error)
        }
    }

    /// One update inside the open transaction.
    private func append(_ event: OrderEvent, to orderID: String, in connection: any SQLConnection) throws -> LoggedUpdate {
        // Taking the next number locks the order's row until the commit: replicas publishing to
        // one order take turns.
        guard
            let numbered = try connection.first(
                """
                UPDATE orders SET last_sequence = last_sequence + 1 WHERE id = ? RETURNING last_sequence, pruned_through
                """, .text(orderID), as: { (sequence: $0.int64(at: 0), prunedThrough: $0.int64(at: 1)) })
        else {
            throw RPCError(code: .notFound, message: "no order '\(orderID)'")
        }
        let (sequence, prunedThrough) = numbered
        let now = Self.nowNanoseconds()
        var message = OrderUpdate()
        message.occurredAt = Self.timestamp(nanoseconds: now)
        message.event = event
        try connection.run(
            "INSERT INTO updates (order_id, sequence, occurred_at, message) VALUES (?, ?, ?, ?)",
            .text(orderID), .integer(sequence), .integer(now), .blob(try message.serializedBytes()))
        try apply(event, sequence: sequence, occurredAt: message.occurredAt, to: orderID, in: connection)
        try prune(orderID, lastSequence: sequence, prunedThrough: prunedThrough, now: now, in: connection)
        try connection.notify(channel: Self.channel, payload: FeedAnnouncement(source: replicaID, position: sequence, key: orderID).payload)
        message.updateID = FeedPosition(epoch: epoch, key: orderID, sequence: sequence).token
        return LoggedUpdate(sequence: sequence, message: message)
    }

    /// Where a watch from `token` starts: the sequence number after which updates are sent.
    /// An empty token means "from now". Prunes the order first so age-based retention holds
    /// even for an order nobody publishes to.
    ///
    /// - Throws: `.notFound`, `.invalidArgument` (malformed, another order's, or ahead of the
    ///   log), `.outOfRange` (older than what is retained, or another epoch).
    public func startSequence(for orderID: String, since token: String) async throws -> Int64 {
        try await database.transaction { [self] connection in
            guard let header = try Self.header(of: orderID, in: connection) else {
                throw RPCError(code: .notFound, message: "no order '\(orderID)'")
            }
            let prunedThrough = try prune(
                orderID, lastSequence: header.lastSequence, prunedThrough: header.prunedThrough,
                now: Self.nowNanoseconds(), in: connection)
            guard !token.isEmpty else { return header.lastSequence }
            let since = try FeedPosition.parse(token, key: orderID, epoch: epoch, names: OrderErrors.names).sequence
            guard since <= header.lastSequence else {
                throw FeedError.tokenAhead(token, key: orderID, names: OrderErrors.names)
            }
            try checkRetained(since, prunedThrough: prunedThrough, orderID: orderID)
            return since
        }
    }

    /// Up to `limit` updates of the order after sequence `after`, oldest first.
    ///
    /// - Throws: `.outOfRange` when retention has dropped updates after `after` meanwhile.
    public func updates(of orderID: String, after: Int64, limit: Int = 256) async throws -> [LoggedUpdate] {
        try await database.withConnection { [self] connection in try updates(of: orderID, after: after, limit: limit, in: connection) }
    }

    private func updates(of orderID: String, after: Int64, limit: Int, in connection: any SQLConnection) throws -> [LoggedUpdate] {
        guard let header = try Self.header(of: orderID, in: connection) else {
            throw RPCError(code: .notFound, message: "no order '\(orderID)'")
        }
        try checkRetained(after, prunedThrough: header.prunedThrough, orderID: orderID)
        return try connection.all(
            "SELECT sequence, message FROM updates WHERE order_id = ? AND sequence > ? ORDER BY sequence LIMIT ?",
            .text(orderID), .integer(after), .int(limit)
        ) { row in
            let sequence = row.int64(at: 0)
            var message = try OrderUpdate(serializedBytes: row.blob(at: 1))
            message.updateID = FeedPosition(epoch: epoch, key: orderID, sequence: sequence).token
            return LoggedUpdate(sequence: sequence, message: message)
        }
    }

    /// The token for sequence `sequence` of `orderID` (position markers use it).
    public func token(of orderID: String, sequence: Int64) -> String {
        FeedPosition(epoch: epoch, key: orderID, sequence: sequence).token
    }

    private func checkRetained(_ since: Int64, prunedThrough: Int64, orderID: String) throws {
        guard since >= prunedThrough else {
            throw FeedError.notRetained(
                key: orderID, oldest: FeedPosition(epoch: epoch, key: orderID, sequence: prunedThrough), names: OrderErrors.names)
        }
    }

    // MARK: Replicas

    /// Wakes `feed`'s watchers with the updates other replicas of this database commit, until
    /// the returned listening is stopped; `onChange` hears whether the database is reachable
    /// (for health). Nil for a database only this process uses (SQLite).
    ///
    /// Announcements are wake-ups, not data: for each order with watchers here, the newest
    /// announced update is read from the log and queued, and each watcher fills any gap before
    /// it from the log (`UpdateStreamer`). After the listener reconnects, every watched order
    /// is woken the same way, so what was announced while it was away is not missed.
    public func relay(to feed: OrderFeed, onChange: @escaping @Sendable (_ reachable: Bool) -> Void = { _ in }) -> (any SQLListening)? {
        database.listen(to: Self.channel) { [self] notification in
            switch notification {
            case .payloads(let payloads):
                var newest: [String: Int64] = [:]
                for case let heard? in payloads.map(FeedAnnouncement.init(payload:)) where heard.source != replicaID {
                    if feed.subscriberCount(of: heard.key) > 0 { newest[heard.key] = max(newest[heard.key] ?? 0, heard.position) }
                }
                wake(feed, newest)
            case .listening:
                onChange(true)
                wake(feed, Dictionary(feed.watchedOrders.map { ($0, Int64.max) }, uniquingKeysWith: max))
            case .lost:
                onChange(false)
            }
        }
    }

    /// Queues for each order its update at the given sequence (`Int64.max`: its newest).
    private func wake(_ feed: OrderFeed, _ orders: [String: Int64]) {
        guard !orders.isEmpty else { return }
        try? database.withConnection { connection in
            for (orderID, sequence) in orders {
                let newest =
                    sequence == .max
                    ? try? connection.first("SELECT last_sequence FROM orders WHERE id = ?", .text(orderID), as: { $0.int64(at: 0) })
                    : sequence
                guard let newest, newest > 0,
                    let update = try? updates(of: orderID, after: newest - 1, limit: 1, in: connection).first
                else { continue }
                feed.deliver(update, for: orderID)
            }
        }
    }

    // MARK: State

    private static func header(of orderID: String, in connection: any SQLConnection) throws -> OrderHeader? {
        try connection.first("SELECT customer_id, last_sequence, pruned_through FROM orders WHERE id = ?", .text(orderID)) { row in
            OrderHeader(customerID: row.text(at: 0), lastSequence: row.int64(at: 1), prunedThrough: row.int64(at: 2))
        }
    }

    private func snapshot(of orderID: String, in connection: any SQLConnection) throws -> OrderSnapshot? {
        guard
            var snapshot = try connection.first(
                """
                SELECT customer_id, status, eta_display, courier_latitude, courier_longitude, last_sequence FROM orders WHERE id = ?
                """, .text(orderID),
                as: { row in
                    OrderSnapshot.with { snapshot in
                        snapshot.orderID = orderID
                        snapshot.customerID = row.text(at: 0)
                        snapshot.status = OrderStatus(rawValue: row.int(at: 1)) ?? .unspecified
                        snapshot.etaDisplay = row.text(at: 2)
                        if !row.isNull(at: 3) {
                            snapshot.courier = .with {
                                $0.latitude = row.double(at: 3)
                                $0.longitude = row.double(at: 4)
                            }
                        }
                        snapshot.latestUpdateID = token(of: orderID, sequence: row.int64(at: 5))
                    }
                })
        else { return nil }
        snapshot.timeline = try connection.all("SELECT event FROM timeline WHERE order_id = ? ORDER BY sequence", .text(orderID)) {
            try Orders_V1_TimelineEvent(serializedBytes: $0.blob(at: 0))
        }
        return snapshot
    }

    /// Folds one event into the order's row (and timeline).
    private func apply(
        _ event: OrderEvent, sequence: Int64, occurredAt: Google_Protobuf_Timestamp,
        to orderID: String, in connection: any SQLConnection
    ) throws {
        switch event {
        case .statusChanged(let change):
            try connection.run("UPDATE orders SET status = ? WHERE id = ?", .int(change.status.rawValue), .text(orderID))
        case .etaChanged(let change):
            try connection.run("UPDATE orders SET eta_display = ? WHERE id = ?", .text(change.etaDisplay), .text(orderID))
        case .courierMoved(let move):
            try connection.run(
                "UPDATE orders SET courier_latitude = ?, courier_longitude = ? WHERE id = ?",
                .real(move.latitude), .real(move.longitude), .text(orderID))
        case .timelineEvent(var entry):
            if !entry.hasOccurredAt { entry.occurredAt = occurredAt }
            try connection.run(
                "INSERT INTO timeline (order_id, sequence, event) VALUES (?, ?, ?)",
                .text(orderID), .integer(sequence), .blob(try entry.serializedBytes()))
        }
    }

    /// Drops the order's updates beyond the count limit or older than the age limit (always a
    /// prefix of its log); returns the new `pruned_through`.
    @discardableResult
    private func prune(
        _ orderID: String, lastSequence: Int64, prunedThrough: Int64, now: Int64, in connection: any SQLConnection
    ) throws -> Int64 {
        let ageLimit = retention.maxAge.components
        let maxAgeNanoseconds = ageLimit.seconds * 1_000_000_000 + ageLimit.attoseconds / 1_000_000_000
        let cutoff =
            try connection.first(
                """
                SELECT max(sequence) FROM updates WHERE order_id = ? AND (sequence <= ? OR occurred_at < ?)
                """, .text(orderID), .integer(lastSequence - Int64(retention.maxUpdatesPerOrder)), .integer(now - maxAgeNanoseconds),
                as: { $0.isNull(at: 0) ? nil : $0.int64(at: 0) }) ?? nil
        guard let cutoff, cutoff > prunedThrough else { return prunedThrough }
        try connection.run("DELETE FROM updates WHERE order_id = ? AND sequence <= ?", .text(orderID), .integer(cutoff))
        try connection.run("UPDATE orders SET pruned_through = ? WHERE id = ?", .integer(cutoff), .text(orderID))
        return cutoff
    }

    // MARK: Schema

    /// Schema versions, applied in order.
    static let schema = SchemaMigrations(
        component: "orders",
        steps: [
            (
                sqlite: """
                CREATE TABLE log_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                CREATE TABLE orders (
                    id TEXT PRIMARY KEY,
                    customer_id TEXT NOT NULL,
                    status INTEGER NOT NULL,
                    eta_display TEXT NOT NULL,
                    courier_latitude REAL,
                    courier_longitude REAL,
                    last_sequence INTEGER NOT NULL DEFAULT 0,
                    pruned_through INTEGER NOT NULL DEFAULT 0,
                    created_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE updates (
                    order_id TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
                    sequence INTEGER NOT NULL,
                    occurred_at INTEGER NOT NULL,
                    message BLOB NOT NULL,
                    PRIMARY KEY (order_id, sequence)
                ) WITHOUT ROWID;
                CREATE TABLE timeline (
                    order_id TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
                    sequence INTEGER NOT NULL,
                    event BLOB NOT NULL,
                    PRIMARY KEY (order_id, sequence)
                ) WITHOUT ROWID;
                """,
                postgres: """
                CREATE TABLE log_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
                CREATE TABLE orders (
                    id TEXT PRIMARY KEY,
                    customer_id TEXT NOT NULL,
                    status INTEGER NOT NULL,
                    eta_display TEXT NOT NULL,
                    courier_latitude DOUBLE PRECISION,
                    courier_longitude DOUBLE PRECISION,
                    last_sequence BIGINT NOT NULL DEFAULT 0,
                    pruned_through BIGINT NOT NULL DEFAULT 0,
                    created_at BIGINT NOT NULL
                );
                CREATE TABLE updates (
                    order_id TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
                    sequence BIGINT NOT NULL,
                    occurred_at BIGINT NOT NULL,
                    message BYTEA NOT NULL,
                    PRIMARY KEY (order_id, sequence)
                );
                CREATE TABLE timeline (
                    order_id TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
                    sequence BIGINT NOT NULL,
                    event BYTEA NOT NULL,
                    PRIMARY KEY (order_id, sequence)
                );
                """
            )
        ])

    // MARK: Time

    static func nowNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    static func timestamp(nanoseconds: Int64) -> Google_Protobuf_Timestamp {
        Google_Protobuf_Timestamp(seconds: nanoseconds / 1_000_000_000, nanos: Int32(nanoseconds % 1_000_000_000))
    }
}
