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
/// (with its `update_id` and `occurred_at` filled in).
public struct LoggedUpdate: Sendable {
    public var sequence: Int64
    public var message: OrderUpdate

    /// The kind of its event, for FollowOrder's `include` set.
    public var kind: EventKind { message.event?.kind ?? .unspecified }

    /// The update an entry of the order log holds.
    init(_ entry: FeedLog.Entry, in log: FeedLog) throws {
        sequence = entry.sequence
        message = try OrderUpdate(serializedBytes: entry.payload)
        message.occurredAt = entry.timestamp
        message.updateID = log.position(of: entry.key, sequence: entry.sequence).token
    }
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

/// Every order: its current state and timeline in the `orders` tables, and its updates in a
/// `FeedLog` (the feed `orders`), numbered 1, 2, 3... per order, in a database: an SQLite file
/// (WAL) for one process, or PostgreSQL shared by every replica.
///
/// `publish` appends the update and folds it into the order's state in one transaction (the
/// feed's `apply` hook), and returns once that is committed, so an acknowledged update
/// survives a crash of the server; concurrent publishes share commits. The feed keeps the
/// resume tokens' epoch, retention (`Retention`) and the wake-ups across replicas; its
/// `subscribers` are this process's watchers, each with a bounded buffer, ended with
/// `RESOURCE_EXHAUSTED` when it falls `watchBuffer` updates behind (its client resumes).
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

    /// The orders' updates: their log, and this process's watchers.
    public let feed: FeedLog
    public let retention: Retention
    public var database: any SQLDatabase { feed.database }
    public var epoch: UInt64 { feed.epoch }

    /// Opens (creating and migrating) an SQLite log at `path`; `":memory:"` for a private one.
    public convenience init(
        path: String, retention: Retention = Retention(), durability: Durability = .full, watchBuffer: Int = 1_024
    ) throws {
        try self.init(
            database: SQLiteStore(path: path, synchronous: durability.rawValue.uppercased()), retention: retention, watchBuffer: watchBuffer
        )
    }

    /// Opens (creating and migrating) the log in `database`; a watcher may fall `watchBuffer`
    /// updates behind before it is ended.
    public init(database: any SQLDatabase, retention: Retention = Retention(), watchBuffer: Int = 1_024) throws {
        self.retention = retention
        try database.withConnection { connection in
            try FeedLog.schema.apply(to: connection)
            try Self.schema.apply(to: connection, legacyVersion: SchemaMigrations.sqliteUserVersion)
        }
        feed = try FeedLog(
            name: "orders", database: database, names: OrderErrors.names, keys: .createdExplicitly,
            retention: FeedLog.Retention(maxEntriesPerKey: retention.maxUpdatesPerOrder, maxAge: retention.maxAge),
            subscribers: FeedSubscribers(bufferLimit: watchBuffer, overflow: .end, names: OrderErrors.names), channel: Self.channel)
    }

    // MARK: Orders

    /// Creates an order; `.alreadyExists` when the id is taken.
    public func createOrder(id: String, customerID: String, etaDisplay: String) async throws -> OrderSnapshot {
        try await database.transaction { [self] connection in
            let created = try connection.first(
                """
                INSERT INTO orders (id, customer_id, status, eta_display, created_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, .text(id), .text(customerID), .int(OrderStatus.received.rawValue), .text(etaDisplay), .integer(feed.now),
                as: { _ in true })
            guard created == true else { throw RPCError(code: .alreadyExists, message: "order '\(id)' already exists") }
            try feed.createKey(id, in: connection)
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
        try await database.withConnection { [self] connection in
            guard
                let customerID = try connection.first(
                    "SELECT customer_id FROM orders WHERE id = ?", .text(orderID), as: { $0.text(at: 0) }),
                let state = try feed.state(of: orderID, in: connection)
            else { return nil }
            return OrderHeader(customerID: customerID, lastSequence: state.lastSequence, prunedThrough: state.prunedThrough)
        }
    }

    /// The order's current state with the position of its latest update; nil when unknown.
    public func snapshot(of orderID: String) async throws -> OrderSnapshot? {
        try await database.withConnection { [self] in try snapshot(of: orderID, in: $0) }
    }

    // MARK: Updates

    /// Appends `event` to the order's log and applies it to the order's state; returns once
    /// that is committed. After the commit (and still in log order) the update goes to the
    /// order's watchers, then `afterCommit` runs.
    ///
    /// Concurrent publishes share commits (group commit, `FeedLog.append`); one failing
    /// (`.notFound`) fails alone; the database failing fails them all (`.unavailable`), and
    /// none is acknowledged.
    public func publish(
        _ event: OrderEvent, to orderID: String, afterCommit: (@Sendable () -> Void)? = nil
    ) async throws -> LoggedUpdate {
        let payload = try OrderUpdate.with { $0.event = event }.serializedBytes() as [UInt8]
        var committed: (@Sendable (FeedLog.Entry) -> Void)?
        if let afterCommit { committed = { _ in afterCommit() } }
        do {
            let entry = try await feed.append(
                payload, to: orderID,
                apply: { [self] entry, connection in
                    try apply(event, sequence: entry.sequence, occurredAt: entry.timestamp, to: orderID, in: connection)
                },
                afterCommit: committed)
            return try LoggedUpdate(entry, in: feed)
        } catch let error as FeedError where error.reason == .unknownKey {
            throw RPCError(code: .notFound, message: "no order '\(orderID)'")
        }
    }

    /// Where a watch from `token` starts: the sequence number after which updates are sent.
    /// An empty token means "from now".
    ///
    /// - Throws: `FeedError`: `.unknownKey`, `.malformedToken`, `.tokenOfAnotherKey`, `.tokenAhead`
    ///   (`INVALID_ARGUMENT`), `.notRetained`, `.epochChanged` (`OUT_OF_RANGE`).
    public func startSequence(for orderID: String, since token: String) async throws -> Int64 {
        try await feed.start(of: orderID, after: token)
    }

    /// Up to `limit` updates of the order after sequence `after`, oldest first.
    ///
    /// - Throws: `.outOfRange` when retention has dropped updates after `after` meanwhile.
    public func updates(of orderID: String, after: Int64, limit: Int = 256) async throws -> [LoggedUpdate] {
        try await feed.entries(of: orderID, after: after, limit: limit).map { try LoggedUpdate($0, in: feed) }
    }

    /// The token for sequence `sequence` of `orderID` (position markers use it).
    public func token(of orderID: String, sequence: Int64) -> String {
        feed.position(of: orderID, sequence: sequence).token
    }

    /// Ends every watch with `.unavailable`, now and for later watchers: the server is
    /// shutting down (clients resume elsewhere from their last update id).
    public func shutdown() {
        feed.subscribers.shutdown(RPCError(code: .unavailable, message: "the server is shutting down; resume from your last update id"))
    }

    // MARK: State

    private func snapshot(of orderID: String, in connection: any SQLConnection) throws -> OrderSnapshot? {
        guard
            var snapshot = try connection.first(
                """
                SELECT customer_id, status, eta_display, courier_latitude, courier_longitude FROM orders WHERE id = ?
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
                    }
                })
        else { return nil }
        snapshot.latestUpdateID = token(of: orderID, sequence: try feed.state(of: orderID, in: connection)?.lastSequence ?? 0)
        snapshot.timeline = try connection.all("SELECT event FROM timeline WHERE order_id = ? ORDER BY sequence", .text(orderID)) {
            try Orders_V1_TimelineEvent(serializedBytes: $0.blob(at: 0))
        }
        return snapshot
    }

    /// Folds one event into the order's row (and timeline), inside its append's transaction.
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
            ),
            // With PitlaneLive: the updates, each order's position and the epoch move into the
            // shared feed tables (FeedLog.schema, applied first) as the feed `orders`.
            (
                sqlite: OrderLog.moveToFeed + """
                    ALTER TABLE orders DROP COLUMN last_sequence;
                    ALTER TABLE orders DROP COLUMN pruned_through;
                    """,
                postgres: OrderLog.moveToFeed + "ALTER TABLE orders DROP COLUMN last_sequence, DROP COLUMN pruned_through;"
            ),
        ])

    private static let moveToFeed = """
        INSERT INTO feed_epochs (feed, epoch) SELECT 'orders', value FROM log_meta WHERE key = 'epoch';
        INSERT INTO feed_keys (feed, key, last_sequence, pruned_through) SELECT 'orders', id, last_sequence, pruned_through FROM orders;
        INSERT INTO feed_entries (feed, key, sequence, occurred_at, payload)
            SELECT 'orders', order_id, sequence, occurred_at, message FROM updates;
        DROP TABLE updates;
        DROP TABLE log_meta;

        """
}
