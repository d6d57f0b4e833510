import Glibc
import PitlaneCore
import PitlaneProtobuf
import PitlaneSQL
import Synchronization

/// A durable log of updates per key — an order, a room — in a database: an SQLite file for one
/// process, or PostgreSQL shared by every replica.
///
/// Each key's updates are numbered 1, 2, 3… in the transaction that appends them (the key's
/// row is locked until the commit), so the numbers are the key's one order across every
/// replica. ``append(_:to:apply:afterCommit:)`` returns only once its transaction is
/// committed: an acknowledged update survives a crash. Appends that arrive while one commits
/// share the next commit (group commit): a burst is a few disk syncs, not one per update.
///
/// Retention keeps at most ``Retention/maxEntriesPerKey`` updates per key, none older than
/// ``Retention/maxAge``; the key remembers how far it was pruned, so resuming from before that
/// is ``FeedError/Reason/notRetained`` rather than a silent gap. The log's epoch is chosen at
/// random when its database is created: tokens from another database (a reset log) are
/// ``FeedError/Reason/epochChanged``. Both are `OUT_OF_RANGE`: the client starts over from a
/// snapshot.
///
/// Committed updates go to this process's ``subscribers`` in log order, and each commit is
/// announced on ``channel`` (``FeedAnnouncement``) so other replicas' ``relay(onChange:wake:)`` wake
/// theirs; the log stays the truth, so a lost announcement only delays.
///
/// A log stores bytes (a serialized message, typically); a service keeps its own state beside
/// it with the `apply` hook, which runs inside the append's transaction.
public final class FeedLog: Sendable {
    /// What a log keeps.
    public struct Retention: Sendable {
        /// Updates kept per key (the newest); nil for no limit.
        public var maxEntriesPerKey: Int?
        /// Updates older than this are dropped; nil for no limit.
        public var maxAge: Duration?

        /// Keeps the newest `maxEntriesPerKey` updates of each key, none older than `maxAge`.
        public init(maxEntriesPerKey: Int? = 10_000, maxAge: Duration? = .seconds(7 * 24 * 3600)) {
            self.maxEntriesPerKey = maxEntriesPerKey
            self.maxAge = maxAge
        }

        /// Keeps everything.
        public static var unlimited: Retention { Retention(maxEntriesPerKey: nil, maxAge: nil) }
    }

    /// Whether appending to a key that has no row creates it (a chat room exists once someone
    /// speaks) or fails with ``FeedError/Reason/unknownKey`` (an order exists once created, with
    /// ``createKey(_:in:)``).
    public enum Keys: Sendable {
        /// Appending creates the key.
        case createdOnAppend
        /// Keys are created with ``FeedLog/createKey(_:in:)``.
        case createdExplicitly
    }

    /// One committed update.
    public struct Entry: Sendable {
        /// Its key.
        public var key: String
        /// Its number in the key's log, from 1.
        public var sequence: Int64
        /// When it was appended: nanoseconds since 1970 on the log's clock.
        public var occurredAt: Int64
        /// What was appended.
        public var payload: [UInt8]

        /// `occurredAt` as a protobuf timestamp.
        public var timestamp: Google_Protobuf_Timestamp {
            Google_Protobuf_Timestamp(seconds: occurredAt / 1_000_000_000, nanos: Int32(occurredAt % 1_000_000_000))
        }
    }

    /// Where a key's log stands.
    public struct KeyState: Sendable, Equatable {
        /// The newest update's sequence number; 0 before the first.
        public var lastSequence: Int64
        /// Updates up to this one were dropped by retention.
        public var prunedThrough: Int64
    }

    /// The feed's name: its rows in the shared tables, and its channel's default.
    public let name: String
    /// The random epoch of this feed in this database.
    public let epoch: UInt64
    /// What the log keeps.
    public let retention: Retention
    /// The database it lives in.
    public let database: any SQLDatabase
    /// Where commits are announced to other replicas.
    public let channel: String
    /// Words the errors (`FeedError`) for this feed's clients.
    public let names: FeedNames
    /// Subscribers of a log: each buffers a bounded number of entries, then meets its policy.
    public typealias Subscribers = FeedSubscribers<FeedBuffer<Entry>>

    /// This process's subscribers, handed each committed update in log order.
    public let subscribers: Subscribers

    private let keys: Keys
    private let clock: WallClock
    /// Tells this process's announcements from other replicas'.
    private let replicaID = String(UInt64.random(in: 1 ... .max), radix: 36)
    private let queue = Mutex(AppendQueue())

    /// Opens the feed `name` in `database`, creating its tables and epoch if they are not there.
    ///
    /// - Parameters:
    ///   - name: The feed's name, unique within the database.
    ///   - database: Where the log lives.
    ///   - names: How errors name the feed's keys and what a client should do.
    ///   - keys: Whether appending creates a key. Default: it does.
    ///   - retention: What the log keeps. Default: 10,000 updates per key, a week.
    ///   - subscribers: This process's subscribers. Default: 1,024 buffered updates each, then the subscriber catches up from the log.
    ///   - channel: Where commits are announced. Default: `pitlane_` and the name.
    ///   - timeSource: The clock updates are stamped with and retention ages by. Default: real time.
    public init(
        name: String, database: any SQLDatabase, names: FeedNames, keys: Keys = .createdOnAppend, retention: Retention = Retention(),
        subscribers: Subscribers? = nil, channel: String? = nil, timeSource: TimeSource = .continuous
    ) throws {
        self.name = name
        self.database = database
        self.names = names
        self.keys = keys
        self.retention = retention
        self.subscribers = subscribers ?? Subscribers(names: names)
        self.channel = channel ?? "pitlane_" + name
        clock = WallClock(timeSource)
        epoch = try database.withConnection { connection in
            try Self.schema.apply(
                to: connection,
                seed: { connection in
                    var epoch: UInt64 = 0
                    while epoch == 0 { epoch = UInt64.random(in: .min ... .max) }
                    try connection.run(
                        "INSERT INTO feed_epochs (feed, epoch) VALUES (?, ?) ON CONFLICT (feed) DO NOTHING", .text(name),
                        .integer(Int64(bitPattern: epoch)))
                })
            guard let stored = try connection.first("SELECT epoch FROM feed_epochs WHERE feed = ?", .text(name), as: { $0.int64(at: 0) })
            else { throw DatabaseError(.other, message: "feed '\(name)' has no epoch") }
            return UInt64(bitPattern: stored)
        }
    }

    /// The position of update `sequence` of `key`.
    public func position(of key: String, sequence: Int64) -> FeedPosition {
        FeedPosition(epoch: epoch, key: key, sequence: sequence)
    }

    /// The time on the log's clock, in nanoseconds since 1970.
    public var now: Int64 { clock.now }

    // MARK: Keys

    /// Creates `key` inside the caller's open transaction; false when it exists.
    @discardableResult
    public func createKey(_ key: String, in connection: any SQLConnection) throws -> Bool {
        try connection.first(
            "INSERT INTO feed_keys (feed, key) VALUES (?, ?) ON CONFLICT (feed, key) DO NOTHING RETURNING 1", .text(name), .text(key),
            as: { _ in true }) ?? false
    }

    /// Where `key`'s log stands; nil for a key that does not exist.
    public func state(of key: String, in connection: any SQLConnection) throws -> KeyState? {
        try connection.first(
            "SELECT last_sequence, pruned_through FROM feed_keys WHERE feed = ? AND key = ?", .text(name), .text(key),
            as: { KeyState(lastSequence: $0.int64(at: 0), prunedThrough: $0.int64(at: 1)) })
    }

    /// Where `key`'s log stands; nil for a key that does not exist.
    public func state(of key: String) async throws -> KeyState? {
        try await database.withConnection { [self] in try state(of: key, in: $0) }
    }

    // MARK: Appending

    /// Runs inside an append's transaction, after the update is numbered: a service's own
    /// state folded in the same commit. What it throws fails this append alone (its savepoint
    /// is rolled back); a `DatabaseError` fails the whole commit.
    public typealias Apply = @Sendable (_ entry: Entry, _ connection: any SQLConnection) throws -> Void

    /// Appends `payload` to `key`'s log, runs `apply` and prunes what retention no longer
    /// keeps, in one transaction; returns once it is committed. After the commit, in log order
    /// and before the next commit, the entry goes to ``subscribers`` and to `afterCommit`.
    ///
    /// - Throws: ``FeedError`` `.unknownKey` (``Keys/createdExplicitly``), what `apply` throws,
    ///   `DatabaseError` when the commit fails (nothing is acknowledged then).
    @discardableResult
    public func append(
        _ payload: [UInt8], to key: String, apply: Apply? = nil, afterCommit: (@Sendable (Entry) -> Void)? = nil
    ) async throws -> Entry {
        try await withCheckedThrowingContinuation { continuation in
            let leads = queue.withLock { queue in
                queue.pending.append(
                    PendingAppend(payload: payload, key: key, apply: apply, afterCommit: afterCommit, continuation: continuation))
                defer { queue.isCommitting = true }
                return !queue.isCommitting
            }
            if leads { database.perform { self.commitQueued() } }
        }
    }

    private struct PendingAppend {
        var payload: [UInt8]
        var key: String
        var apply: Apply?
        var afterCommit: (@Sendable (Entry) -> Void)?
        var continuation: CheckedContinuation<Entry, any Error>
    }

    private struct AppendQueue {
        var pending: [PendingAppend] = []
        /// An appender is committing; it takes whatever queues up meanwhile.
        var isCommitting = false
    }

    /// Commits batches until the queue is empty, then steps down. Blocks: runs where the
    /// database may (`SQLDatabase.perform`).
    private func commitQueued() {
        while true {
            let arrived: [PendingAppend] = queue.withLock { queue in
                defer { queue.pending.removeAll() }
                if queue.pending.isEmpty { queue.isCommitting = false }
                return queue.pending
            }
            guard !arrived.isEmpty else { return }
            // Keys in one order (arrival order within each): replicas committing batches at once
            // lock their keys' rows in the same order, so they never deadlock.
            let batch = arrived.enumerated().sorted { ($0.element.key, $0.offset) < ($1.element.key, $1.offset) }.map(\.element)
            var results: [Result<Entry, any Error>] = []
            do {
                try database.withConnection { connection in
                    try connection.transaction {
                        results = []
                        for request in batch { results.append(try appendUnderSavepoint(request, in: connection)) }
                    }
                }
                for (request, result) in zip(batch, results) {
                    guard case .success(let entry) = result else { continue }
                    subscribers.deliver(entry, for: entry.key)
                    request.afterCommit?(entry)
                }
            } catch {
                results = batch.map { _ in .failure(error) }
            }
            for (request, result) in zip(batch, results) { request.continuation.resume(with: result) }
        }
    }

    /// One append inside the batch's transaction: its own failure is its result; the
    /// database's is thrown (it ends the transaction).
    private func appendUnderSavepoint(_ request: PendingAppend, in connection: any SQLConnection) throws -> Result<Entry, any Error> {
        try connection.execute("SAVEPOINT feed_append")
        do {
            let entry = try append(request, in: connection)
            try connection.execute("RELEASE feed_append")
            return .success(entry)
        } catch let error where !(error is DatabaseError) {
            try connection.execute("ROLLBACK TO feed_append; RELEASE feed_append")
            return .failure(error)
        }
    }

    private func append(_ request: PendingAppend, in connection: any SQLConnection) throws -> Entry {
        let key = request.key
        // Taking the next number locks the key's row until the commit: replicas appending to
        // one key take turns.
        let numbering =
            switch keys {
            case .createdOnAppend:
                """
                INSERT INTO feed_keys (feed, key, last_sequence) VALUES (?, ?, 1) ON CONFLICT (feed, key)
                DO UPDATE SET last_sequence = feed_keys.last_sequence + 1 RETURNING last_sequence, pruned_through
                """
            case .createdExplicitly:
                "UPDATE feed_keys SET last_sequence = last_sequence + 1 WHERE feed = ? AND key = ? RETURNING last_sequence, pruned_through"
            }
        guard
            let numbered = try connection.first(
                numbering, .text(name), .text(key), as: { KeyState(lastSequence: $0.int64(at: 0), prunedThrough: $0.int64(at: 1)) })
        else { throw FeedError.unknownKey(key, names: names) }
        let entry = Entry(key: key, sequence: numbered.lastSequence, occurredAt: clock.now, payload: request.payload)
        try connection.run(
            "INSERT INTO feed_entries (feed, key, sequence, occurred_at, payload) VALUES (?, ?, ?, ?, ?)",
            .text(name), .text(key), .integer(entry.sequence), .integer(entry.occurredAt), .blob(entry.payload))
        try request.apply?(entry, connection)
        try prune(key, numbered, now: entry.occurredAt, in: connection)
        try connection.notify(channel: channel, payload: FeedAnnouncement(source: replicaID, position: entry.sequence, key: key).payload)
        return entry
    }

    // MARK: Reading

    /// Where a subscription from `token` starts: the sequence number after which updates are
    /// sent. An empty token means "from now". Prunes the key first, so retention by age holds
    /// for a key nobody appends to.
    ///
    /// - Throws: ``FeedError``: `.unknownKey` (``Keys/createdExplicitly``); `.malformedToken`, `.tokenOfAnotherKey`,
    ///   `.tokenAhead` (`INVALID_ARGUMENT`); `.notRetained`, `.epochChanged` (`OUT_OF_RANGE`).
    public func start(of key: String, after token: String) async throws -> Int64 {
        try await database.transaction { [self] connection in
            var state = try existingState(of: key, in: connection)
            state.prunedThrough = try prune(key, state, now: clock.now, in: connection)
            guard !token.isEmpty else { return state.lastSequence }
            let since = try FeedPosition.parse(token, key: key, epoch: epoch, names: names).sequence
            guard since <= state.lastSequence else { throw FeedError.tokenAhead(token, key: key, names: names) }
            try checkRetained(since, state, key: key)
            return since
        }
    }

    /// Up to `limit` updates of `key` after sequence `after`, oldest first.
    ///
    /// - Throws: ``FeedError`` `.notRetained` when retention dropped updates after `after`;
    ///   `.unknownKey` (``Keys/createdExplicitly``).
    public func entries(of key: String, after: Int64, limit: Int = 256) async throws -> [Entry] {
        try await database.withConnection { [self] in try entries(of: key, after: after, limit: limit, in: $0) }
    }

    /// Up to `limit` updates of `key` after sequence `after`, oldest first, on `connection`.
    public func entries(of key: String, after: Int64, limit: Int = 256, in connection: any SQLConnection) throws -> [Entry] {
        try checkRetained(after, try existingState(of: key, in: connection), key: key)
        return try connection.all(
            """
            SELECT sequence, occurred_at, payload FROM feed_entries WHERE feed = ? AND key = ? AND sequence > ?
            ORDER BY sequence LIMIT ?
            """, .text(name), .text(key), .integer(after), .int(limit)
        ) { Self.entry(of: key, from: $0) }
    }

    /// The newest `count` retained updates of `key` up to sequence `through`, oldest first (a
    /// room's history); none for a key that does not exist.
    public func latest(_ count: Int, of key: String, through: Int64, in connection: any SQLConnection) throws -> [Entry] {
        try connection.all(
            """
            SELECT sequence, occurred_at, payload FROM feed_entries WHERE feed = ? AND key = ? AND sequence <= ?
            ORDER BY sequence DESC LIMIT ?
            """, .text(name), .text(key), .integer(through), .int(count)
        ) { Self.entry(of: key, from: $0) }.reversed()
    }

    /// An entry of `key` from a row of `sequence, occurred_at, payload`.
    private static func entry(of key: String, from row: any SQLRow) -> Entry {
        Entry(key: key, sequence: row.int64(at: 0), occurredAt: row.int64(at: 1), payload: row.blob(at: 2))
    }

    /// Where `key`'s log stands; a key without a row is an empty log when appending creates
    /// keys, and unknown otherwise.
    private func existingState(of key: String, in connection: any SQLConnection) throws -> KeyState {
        if let state = try state(of: key, in: connection) { return state }
        guard case .createdOnAppend = keys else { throw FeedError.unknownKey(key, names: names) }
        return KeyState(lastSequence: 0, prunedThrough: 0)
    }

    private func checkRetained(_ after: Int64, _ state: KeyState, key: String) throws {
        guard after >= state.prunedThrough else {
            throw FeedError.notRetained(key: key, oldest: position(of: key, sequence: state.prunedThrough), names: names)
        }
    }

    /// Drops the key's updates beyond the count limit or older than the age limit (always a
    /// prefix of its log); returns the new `pruned_through`.
    @discardableResult
    private func prune(_ key: String, _ state: KeyState, now: Int64, in connection: any SQLConnection) throws -> Int64 {
        guard retention.maxEntriesPerKey != nil || retention.maxAge != nil else { return state.prunedThrough }
        let byCount = retention.maxEntriesPerKey.map { state.lastSequence - Int64($0) } ?? 0
        let byAge = retention.maxAge.map { now - Self.nanoseconds($0) } ?? .min
        let cutoff =
            try connection.first(
                """
                SELECT max(sequence) FROM feed_entries WHERE feed = ? AND key = ? AND (sequence <= ? OR occurred_at < ?)
                """, .text(name), .text(key), .integer(byCount), .integer(byAge), as: { $0.isNull(at: 0) ? nil : $0.int64(at: 0) }) ?? nil
        guard let cutoff, cutoff > state.prunedThrough else { return state.prunedThrough }
        try connection.run(
            "DELETE FROM feed_entries WHERE feed = ? AND key = ? AND sequence <= ?", .text(name), .text(key), .integer(cutoff))
        try connection.run("UPDATE feed_keys SET pruned_through = ? WHERE feed = ? AND key = ?", .integer(cutoff), .text(name), .text(key))
        return cutoff
    }

    // MARK: Replicas

    /// What other replicas moved, as a ``relay(onChange:wake:)`` hears it.
    public enum Wake: Sendable {
        /// These keys moved, each to at least this sequence.
        case moved([String: Int64])
        /// Anything may have moved: the listener was away (it reconnected).
        case anyMoved
    }

    /// Wakes this process's subscribers with what other replicas of the database commit, until
    /// the returned listening is stopped; `onChange` hears whether the database is reachable.
    /// Nil for a database only this process uses (SQLite).
    ///
    /// Announcements are wake-ups, not data: `wake` hears which keys moved, and how far. The
    /// default hands each such key with subscribers its newest update (all of them after a
    /// reconnect); a ``FeedStream`` fills any gap before it from the log. A service that keeps
    /// its own followers (a chat room's participants) reads the log itself.
    public func relay(
        onChange: @escaping @Sendable (_ reachable: Bool) -> Void = { _ in },
        wake: (@Sendable (Wake) -> Void)? = nil
    ) -> (any SQLListening)? {
        let wake = wake ?? { [self] wake in deliverNewest(wake) }
        return database.listen(to: channel) { [self] notification in
            switch notification {
            case .payloads(let payloads):
                var newest: [String: Int64] = [:]
                for case let heard? in payloads.map(FeedAnnouncement.init(payload:)) where heard.source != replicaID {
                    newest[heard.key] = max(newest[heard.key] ?? 0, heard.position)
                }
                if !newest.isEmpty { wake(.moved(newest)) }
            case .listening:
                onChange(true)
                wake(.anyMoved)
            case .lost:
                onChange(false)
            }
        }
    }

    /// Hands each key with subscribers its update at the sequence it moved to (its newest after
    /// a reconnect).
    private func deliverNewest(_ wake: Wake) {
        let watched =
            switch wake {
            case .moved(let keys): keys.filter { subscribers.count(of: $0.key) > 0 }
            case .anyMoved: Dictionary(subscribers.keys.map { ($0, Int64.max) }, uniquingKeysWith: max)
            }
        guard !watched.isEmpty else { return }
        try? database.withConnection { connection in
            for (key, sequence) in watched {
                let newest = sequence == .max ? (try? state(of: key, in: connection))?.lastSequence : sequence
                guard let newest, newest > 0, let entry = try? entries(of: key, after: newest - 1, limit: 1, in: connection).first else {
                    continue
                }
                subscribers.deliver(entry, for: key)
            }
        }
    }

    // MARK: Schema

    /// The tables every feed of a database shares (component `feeds` in `pitlane_schema`).
    /// A service that moves its own log into them applies this first.
    public static let schema = SchemaMigrations(
        component: "feeds",
        steps: [
            (
                sqlite: """
                CREATE TABLE feed_epochs (feed TEXT PRIMARY KEY, epoch INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE feed_keys (
                    feed TEXT NOT NULL, key TEXT NOT NULL,
                    last_sequence INTEGER NOT NULL DEFAULT 0, pruned_through INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (feed, key)
                ) WITHOUT ROWID;
                CREATE TABLE feed_entries (
                    feed TEXT NOT NULL, key TEXT NOT NULL, sequence INTEGER NOT NULL, occurred_at INTEGER NOT NULL, payload BLOB NOT NULL,
                    PRIMARY KEY (feed, key, sequence)
                ) WITHOUT ROWID;
                """,
                postgres: """
                CREATE TABLE feed_epochs (feed TEXT PRIMARY KEY, epoch BIGINT NOT NULL);
                CREATE TABLE feed_keys (
                    feed TEXT NOT NULL, key TEXT NOT NULL,
                    last_sequence BIGINT NOT NULL DEFAULT 0, pruned_through BIGINT NOT NULL DEFAULT 0,
                    PRIMARY KEY (feed, key)
                );
                CREATE TABLE feed_entries (
                    feed TEXT NOT NULL, key TEXT NOT NULL, sequence BIGINT NOT NULL, occurred_at BIGINT NOT NULL, payload BYTEA NOT NULL,
                    PRIMARY KEY (feed, key, sequence)
                );
                """
            )
        ])

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// Wall-clock time that follows a `TimeSource`: real time, or for a manual clock the real time
/// it was read at first, moved as the clock moves, so a test ages a log's updates by stepping it.
struct WallClock: Sendable {
    let manual: (clock: ManualClock, start: ContinuousClock.Instant, startNanoseconds: Int64)?

    init(_ source: TimeSource) {
        manual = source.manualClock.map { ($0, $0.now, Self.realTime()) }
    }

    /// Nanoseconds since 1970.
    var now: Int64 {
        guard let manual else { return Self.realTime() }
        return manual.startNanoseconds + FeedLog.nanoseconds(manual.clock.now - manual.start)
    }

    static func realTime() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
