import Glibc
import PitlaneCore
import PitlaneProtobuf
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

/// The durable update log of every order, in SQLite (WAL): each order's current state, its
/// timeline, and its recent updates numbered 1, 2, 3... `publish` returns only after its
/// transaction is committed, so an acknowledged update survives a crash of the server.
///
/// Retention keeps at most `Retention.maxUpdatesPerOrder` updates per order, none older than
/// `Retention.maxAge`; the order remembers how far its log was pruned, so a resume from before
/// that fails with `.outOfRange` instead of silently skipping updates. The log's epoch is
/// chosen at random when the database is created: tokens from another database (a reset log)
/// are recognised.
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

    /// How hard a commit waits for the disk: `.full` survives power loss, `.normal` (WAL) only a
    /// crash of the process.
    public enum Durability: String, Sendable {
        case full, normal
    }

    /// What `access` checks before a read: who owns the order.
    public struct OrderHeader: Sendable {
        public var customerID: String
        public var lastSequence: Int64
        public var prunedThrough: Int64
    }

    public let epoch: UInt64
    public let retention: Retention
    private let connection: Mutex<SQLiteDatabase>
    private let queue = Mutex(PublishQueue())

    /// Opens (creating and migrating) the log at `path`; `":memory:"` for a private one.
    public init(path: String, retention: Retention = Retention(), durability: Durability = .full) throws {
        let database = try SQLiteDatabase(path: path)
        try Self.migrate(database, durability: durability)
        let statement = try database.prepare("SELECT value FROM log_meta WHERE key = 'epoch'")
        guard try statement.step() else { throw SQLiteError(code: 0, message: "the update log has no epoch") }
        epoch = UInt64(bitPattern: statement.int64(at: 0))
        self.retention = retention
        connection = Mutex(database)
    }

    // MARK: Orders

    /// Creates an order; `.alreadyExists` when the id is taken.
    public func createOrder(id: String, customerID: String, etaDisplay: String) throws -> OrderSnapshot {
        try connection.withLock { database in
            try database.transaction {
                let existing = try database.prepare("SELECT 1 FROM orders WHERE id = ?")
                try existing.bind(.text(id))
                if try existing.step() { throw RPCError(code: .alreadyExists, message: "order '\(id)' already exists") }
                try database.prepare("""
                    INSERT INTO orders (id, customer_id, status, eta_display, created_at) VALUES (?, ?, ?, ?, ?)
                    """)
                    .bind(.text(id), .text(customerID), .int(OrderStatus.received.rawValue), .text(etaDisplay), .integer(Self.nowNanoseconds()))
                    .run()
                return try snapshot(of: id, in: database)!
            }
        }
    }

    /// Who owns `orderID` and where its log stands; nil when there is no such order.
    public func header(of orderID: String) throws -> OrderHeader? {
        try connection.withLock { try Self.header(of: orderID, in: $0) }
    }

    /// The order's current state with the position of its latest update; nil when unknown.
    public func snapshot(of orderID: String) throws -> OrderSnapshot? {
        try connection.withLock { try snapshot(of: orderID, in: $0) }
    }

    // MARK: Updates

    /// Appends `event` to the order's log, applies it to the order's state and prunes what
    /// retention no longer keeps; returns once that is committed. After the commit (and still
    /// in log order) hands the update to `afterCommit`.
    ///
    /// Concurrent publishes share commits (group commit): while one transaction commits, the
    /// next publishes queue up and go into one transaction together — one disk sync for all of
    /// them. Each runs under its own savepoint, so one failing (`.notFound`) fails alone.
    public func publish(_ event: OrderEvent, to orderID: String,
                        afterCommit: @escaping @Sendable (LoggedUpdate) -> Void = { _ in }) async throws -> LoggedUpdate {
        try await withCheckedThrowingContinuation { continuation in
            let leads = queue.withLock { queue in
                queue.pending.append(PendingPublish(event: event, orderID: orderID, afterCommit: afterCommit, continuation: continuation))
                defer { queue.isCommitting = true }
                return !queue.isCommitting
            }
            if leads { commitQueued() }
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

    /// Commits batches until the queue is empty, then steps down.
    private func commitQueued() {
        while true {
            let batch: [PendingPublish] = queue.withLock { queue in
                defer { queue.pending.removeAll() }
                if queue.pending.isEmpty { queue.isCommitting = false }
                return queue.pending
            }
            guard !batch.isEmpty else { return }
            let results: [Result<LoggedUpdate, any Error>] = connection.withLock { database in
                var results: [Result<LoggedUpdate, any Error>] = []
                do {
                    try database.transaction {
                        for request in batch {
                            results.append(Result {
                                try database.execute("SAVEPOINT publish")
                                do {
                                    let logged = try append(request.event, to: request.orderID, in: database)
                                    try database.execute("RELEASE publish")
                                    return logged
                                } catch {
                                    try database.execute("ROLLBACK TO publish; RELEASE publish")
                                    throw error
                                }
                            })
                        }
                    }
                } catch {
                    results = batch.map { _ in .failure(error) }
                }
                // Delivered in log order, before the next batch can commit.
                for (request, result) in zip(batch, results) {
                    if case .success(let logged) = result { request.afterCommit(logged) }
                }
                return results
            }
            for (request, result) in zip(batch, results) { request.continuation.resume(with: result) }
        }
    }

    /// One update inside the open transaction.
    private func append(_ event: OrderEvent, to orderID: String, in database: SQLiteDatabase) throws -> LoggedUpdate {
        guard let header = try Self.header(of: orderID, in: database) else {
            throw RPCError(code: .notFound, message: "no order '\(orderID)'")
        }
        let now = Self.nowNanoseconds()
        let sequence = header.lastSequence + 1
        var message = OrderUpdate()
        message.occurredAt = Self.timestamp(nanoseconds: now)
        message.event = event
        try database.prepare("INSERT INTO updates (order_id, sequence, occurred_at, message) VALUES (?, ?, ?, ?)")
            .bind(.text(orderID), .integer(sequence), .integer(now), .blob(try message.serializedBytes()))
            .run()
        try apply(event, sequence: sequence, occurredAt: message.occurredAt, to: orderID, in: database)
        try prune(orderID, lastSequence: sequence, prunedThrough: header.prunedThrough, now: now, in: database)
        message.updateID = UpdatePosition(epoch: epoch, orderID: orderID, sequence: sequence).token
        return LoggedUpdate(sequence: sequence, message: message)
    }

    /// Where a watch from `token` starts: the sequence number after which updates are sent.
    /// An empty token means "from now". Prunes the order first so age-based retention holds
    /// even for an order nobody publishes to.
    ///
    /// - Throws: `.notFound`, `.invalidArgument` (malformed, another order's, or ahead of the
    ///   log), `.outOfRange` (older than what is retained, or another epoch).
    public func startSequence(for orderID: String, since token: String) throws -> Int64 {
        try connection.withLock { database in
            try database.transaction {
                guard let header = try Self.header(of: orderID, in: database) else {
                    throw RPCError(code: .notFound, message: "no order '\(orderID)'")
                }
                let prunedThrough = try prune(orderID, lastSequence: header.lastSequence, prunedThrough: header.prunedThrough,
                                              now: Self.nowNanoseconds(), in: database)
                guard !token.isEmpty else { return header.lastSequence }
                let since = try UpdatePosition.parse(token, orderID: orderID, epoch: epoch).sequence
                guard since <= header.lastSequence else {
                    throw RPCError(code: .invalidArgument, message: "update id \(token) is ahead of order '\(orderID)''s log")
                }
                try checkRetained(since, prunedThrough: prunedThrough, orderID: orderID)
                return since
            }
        }
    }

    /// Up to `limit` updates of the order after sequence `after`, oldest first.
    ///
    /// - Throws: `.outOfRange` when retention has dropped updates after `after` meanwhile.
    public func updates(of orderID: String, after: Int64, limit: Int = 256) throws -> [LoggedUpdate] {
        try connection.withLock { database in
            guard let header = try Self.header(of: orderID, in: database) else {
                throw RPCError(code: .notFound, message: "no order '\(orderID)'")
            }
            try checkRetained(after, prunedThrough: header.prunedThrough, orderID: orderID)
            let statement = try database.prepare("""
                SELECT sequence, message FROM updates WHERE order_id = ? AND sequence > ? ORDER BY sequence LIMIT ?
                """)
            try statement.bind(.text(orderID), .integer(after), .int(limit))
            var page: [LoggedUpdate] = []
            while try statement.step() {
                let sequence = statement.int64(at: 0)
                var message = try OrderUpdate(serializedBytes: statement.blob(at: 1))
                message.updateID = UpdatePosition(epoch: epoch, orderID: orderID, sequence: sequence).token
                page.append(LoggedUpdate(sequence: sequence, message: message))
            }
            return page
        }
    }

    /// The token for sequence `sequence` of `orderID` (position markers use it).
    public func token(of orderID: String, sequence: Int64) -> String {
        UpdatePosition(epoch: epoch, orderID: orderID, sequence: sequence).token
    }

    private func checkRetained(_ since: Int64, prunedThrough: Int64, orderID: String) throws {
        guard since >= prunedThrough else {
            throw OrderErrors.notRetained(orderID: orderID, oldest: token(of: orderID, sequence: prunedThrough), epoch: epoch)
        }
    }

    // MARK: State

    private static func header(of orderID: String, in database: SQLiteDatabase) throws -> OrderHeader? {
        let statement = try database.prepare("SELECT customer_id, last_sequence, pruned_through FROM orders WHERE id = ?")
        try statement.bind(.text(orderID))
        guard try statement.step() else { return nil }
        return OrderHeader(customerID: statement.text(at: 0), lastSequence: statement.int64(at: 1), prunedThrough: statement.int64(at: 2))
    }

    private func snapshot(of orderID: String, in database: SQLiteDatabase) throws -> OrderSnapshot? {
        let statement = try database.prepare("""
            SELECT customer_id, status, eta_display, courier_latitude, courier_longitude, last_sequence FROM orders WHERE id = ?
            """)
        try statement.bind(.text(orderID))
        guard try statement.step() else { return nil }
        var snapshot = OrderSnapshot()
        snapshot.orderID = orderID
        snapshot.customerID = statement.text(at: 0)
        snapshot.status = OrderStatus(rawValue: statement.int(at: 1)) ?? .unspecified
        snapshot.etaDisplay = statement.text(at: 2)
        if !statement.isNull(at: 3) {
            snapshot.courier = .with { $0.latitude = statement.double(at: 3); $0.longitude = statement.double(at: 4) }
        }
        snapshot.latestUpdateID = token(of: orderID, sequence: statement.int64(at: 5))
        let timeline = try database.prepare("SELECT event FROM timeline WHERE order_id = ? ORDER BY sequence")
        try timeline.bind(.text(orderID))
        while try timeline.step() { snapshot.timeline.append(try Orders_V1_TimelineEvent(serializedBytes: timeline.blob(at: 0))) }
        return snapshot
    }

    /// Folds one event into the order's row (and timeline).
    private func apply(_ event: OrderEvent, sequence: Int64, occurredAt: Google_Protobuf_Timestamp,
                       to orderID: String, in database: SQLiteDatabase) throws {
        try database.prepare("UPDATE orders SET last_sequence = ? WHERE id = ?").bind(.integer(sequence), .text(orderID)).run()
        switch event {
        case .statusChanged(let change):
            try database.prepare("UPDATE orders SET status = ? WHERE id = ?").bind(.int(change.status.rawValue), .text(orderID)).run()
        case .etaChanged(let change):
            try database.prepare("UPDATE orders SET eta_display = ? WHERE id = ?").bind(.text(change.etaDisplay), .text(orderID)).run()
        case .courierMoved(let move):
            try database.prepare("UPDATE orders SET courier_latitude = ?, courier_longitude = ? WHERE id = ?")
                .bind(.real(move.latitude), .real(move.longitude), .text(orderID)).run()
        case .timelineEvent(var entry):
            if !entry.hasOccurredAt { entry.occurredAt = occurredAt }
            try database.prepare("INSERT INTO timeline (order_id, sequence, event) VALUES (?, ?, ?)")
                .bind(.text(orderID), .integer(sequence), .blob(try entry.serializedBytes())).run()
        }
    }

    /// Drops the order's updates beyond the count limit or older than the age limit (always a
    /// prefix of its log); returns the new `pruned_through`.
    @discardableResult
    private func prune(_ orderID: String, lastSequence: Int64, prunedThrough: Int64, now: Int64, in database: SQLiteDatabase) throws -> Int64 {
        let ageLimit = retention.maxAge.components
        let maxAgeNanoseconds = ageLimit.seconds * 1_000_000_000 + ageLimit.attoseconds / 1_000_000_000
        let statement = try database.prepare("""
            SELECT max(sequence) FROM updates WHERE order_id = ? AND (sequence <= ? OR occurred_at < ?)
            """)
        try statement.bind(.text(orderID), .integer(lastSequence - Int64(retention.maxUpdatesPerOrder)), .integer(now - maxAgeNanoseconds))
        guard try statement.step(), !statement.isNull(at: 0) else { return prunedThrough }
        let cutoff = statement.int64(at: 0)
        guard cutoff > prunedThrough else { return prunedThrough }
        try database.prepare("DELETE FROM updates WHERE order_id = ? AND sequence <= ?").bind(.text(orderID), .integer(cutoff)).run()
        try database.prepare("UPDATE orders SET pruned_through = ? WHERE id = ?").bind(.integer(cutoff), .text(orderID)).run()
        return cutoff
    }

    // MARK: Schema

    /// Schema versions, applied in order; `PRAGMA user_version` records how many ran.
    private static let migrations = [
        """
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
    ]

    private static func migrate(_ database: SQLiteDatabase, durability: Durability) throws {
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = \(durability.rawValue.uppercased()); PRAGMA foreign_keys = ON")
        let version = try database.userVersion
        guard version <= migrations.count else {
            throw SQLiteError(code: 0, message: "update log schema version \(version) is newer than this server (\(migrations.count))")
        }
        try database.transaction {
            for migration in migrations[version...] { try database.execute(migration) }
            try database.setUserVersion(migrations.count)
            var epoch: UInt64 = 0
            while epoch == 0 { epoch = UInt64.random(in: .min ... .max) }
            try database.prepare("INSERT OR IGNORE INTO log_meta (key, value) VALUES ('epoch', ?)")
                .bind(.integer(Int64(bitPattern: epoch))).run()
        }
    }

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
