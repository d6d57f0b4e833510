import Foundation
import Orders
import PitlaneCore
import PitlaneHTTP2
import PitlaneLive
import PitlaneSQLite
import ServiceHarness
import TestSupport
import Testing

@Suite("OrderLog, its watchers, Mailbox", .timeLimit(.minutes(5)))
struct MailboxTests {
    @Test(
        "group commit: concurrent publishes share transactions, each order numbered 1...n, a failing one fails alone",
        arguments: TestBackend.allCases)
    func groupCommit(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let database = try await backend.makeDatabase(in: directory)
        let log = try OrderLog(database: database)
        for order in ["a", "b"] { _ = try await log.createOrder(id: order, customerID: "c", etaDisplay: "") }
        let results = try await withThrowingTaskGroup(of: (String, Result<Int64, RPCError>).self) { group in
            for index in 0..<300 {
                let order = ["a", "b", "missing"][index % 3]
                group.addTask {
                    do {
                        let logged = try await log.publish(.etaChanged(.with { $0.etaDisplay = "\(index)" }), to: order)
                        return (order, .success(logged.sequence))
                    } catch let error as RPCError {
                        return (order, .failure(error))
                    } catch let error as FeedError {
                        return (order, .failure(error.rpcError))
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for order in ["a", "b"] {
            let sequences = results.filter { $0.0 == order }.compactMap { try? $0.1.get() }.sorted()
            #expect(sequences == Array(1...100))
            #expect(try await log.updates(of: order, after: 0, limit: 1_000).map(\.sequence) == Array(1...100))
        }
        #expect(
            results.filter { $0.0 == "missing" }.allSatisfy {
                if case .failure(let error) = $0.1 { error.code == .notFound } else { false }
            })
        // The epoch and the log survive reopening.
        let reopened = try OrderLog(database: database)
        #expect(reopened.epoch == log.epoch)
        #expect(try await reopened.header(of: "a")?.lastSequence == 100)
    }

    @Test("a log from before PitlaneLive moves into the feed tables: same epoch, tokens, updates and numbering")
    func migratesOldLog() async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let path = directory.path + "/old.sqlite"
        let epoch: Int64 = 0x1234_5678
        let minuteAgo = Int64(Date().timeIntervalSince1970) - 60
        // Schema version 1 of the order log, as the server before PitlaneLive left it.
        try await SQLiteStore(path: path).withConnection { connection in
            try connection.execute(
                """
                CREATE TABLE pitlane_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
                INSERT INTO pitlane_schema VALUES ('orders', 1);
                CREATE TABLE log_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                CREATE TABLE orders (
                    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, status INTEGER NOT NULL, eta_display TEXT NOT NULL,
                    courier_latitude REAL, courier_longitude REAL, last_sequence INTEGER NOT NULL DEFAULT 0,
                    pruned_through INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE updates (
                    order_id TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE, sequence INTEGER NOT NULL,
                    occurred_at INTEGER NOT NULL, message BLOB NOT NULL, PRIMARY KEY (order_id, sequence)
                ) WITHOUT ROWID;
                CREATE TABLE timeline (
                    order_id TEXT NOT NULL REFERENCES orders (id) ON DELETE CASCADE, sequence INTEGER NOT NULL,
                    event BLOB NOT NULL, PRIMARY KEY (order_id, sequence)
                ) WITHOUT ROWID;
                """)
            try connection.run("INSERT INTO log_meta VALUES ('epoch', ?)", .integer(epoch))
            try connection.run("INSERT INTO orders VALUES ('o', 'alice', 1, '9 min', NULL, NULL, 3, 1, 0)")
            for sequence in Int64(2)...3 {
                let message = OrderUpdate.with {
                    $0.occurredAt = .init(seconds: minuteAgo + sequence, nanos: 0)
                    $0.event = .etaChanged(.with { $0.etaDisplay = "\(10 - sequence) min" })
                }
                try connection.run(
                    "INSERT INTO updates VALUES ('o', ?, ?, ?)", .integer(sequence), .integer((minuteAgo + sequence) * 1_000_000_000),
                    .blob(try message.serializedBytes()))
            }
        }
        let log = try OrderLog(path: path)
        #expect(log.epoch == UInt64(epoch))
        #expect(try await log.header(of: "o")?.lastSequence == 3)
        #expect(try await log.header(of: "o")?.prunedThrough == 1)
        let updates = try await log.updates(of: "o", after: 1)
        #expect(updates.map(\.message.etaChanged.etaDisplay) == ["8 min", "7 min"])
        #expect(updates.first?.message.occurredAt.seconds == minuteAgo + 2)
        #expect(try await log.startSequence(for: "o", since: updates[0].message.updateID) == 2)
        #expect(try await log.publish(.etaChanged(.with { $0.etaDisplay = "6 min" }), to: "o").sequence == 4)
        #expect(try await log.snapshot(of: "o")?.etaDisplay == "6 min")
    }

    @Test("a mailbox over its limit ends its reader with the overflow error; one within it delivers in order")
    func overflow() async throws {
        let mailbox = BoundedMailbox<Int>(limit: 3) { RPCError(code: .resourceExhausted, message: "behind by \($0)") }
        for value in 1...3 { #expect(mailbox.offer(value)) }
        #expect(try await mailbox.next() == 1)
        #expect(mailbox.offer(4))  // 2, 3, 4 wait
        #expect(!mailbox.offer(5))
        let error = await rpcError { _ = try await mailbox.next() }
        #expect(error?.message == "behind by 3")
        #expect(!mailbox.offer(6))
    }

    @Test(
        "age retention: updates older than maxAge are pruned; resuming before them is OUT_OF_RANGE, from the latest is fine",
        arguments: TestBackend.allCases)
    func ageRetention(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let database = try await backend.makeDatabase(in: directory)
        let log = try OrderLog(database: database, retention: .init(maxUpdatesPerOrder: 1_000, maxAge: .nanoseconds(1)))
        _ = try await log.createOrder(id: "o", customerID: "c", etaDisplay: "")
        var published: [LoggedUpdate] = []
        for index in 0..<3 { published.append(try await log.publish(.etaChanged(.with { $0.etaDisplay = "\(index)" }), to: "o")) }
        let error = await #expect(throws: FeedError.self) { try await log.startSequence(for: "o", since: published[0].message.updateID) }
        #expect(error?.reason == .notRetained && error?.rpcError.code == .outOfRange && error?.message.contains("GetOrder") == true)
        #expect(try await log.startSequence(for: "o", since: published[2].message.updateID) == 3)
        #expect(try await log.header(of: "o")?.prunedThrough == 3)
        #expect(try await log.snapshot(of: "o")?.etaDisplay == "2")
    }

    @Test("a watcher too far behind the feed is ended with RESOURCE_EXHAUSTED; the feed forgets it", arguments: TestBackend.allCases)
    func slowWatcher(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let log = try OrderLog(database: try await backend.makeDatabase(in: directory), watchBuffer: 4)
        _ = try await log.createOrder(id: "o", customerID: "c", etaDisplay: "")
        let subscription = log.feed.subscribers.subscribe(to: "o")
        for index in 0..<6 { _ = try await log.publish(.etaChanged(.with { $0.etaDisplay = "\(index)" }), to: "o") }
        let error = await #expect(throws: FeedError.self) { while try await subscription.next() != nil {} }
        #expect(error?.rpcError.code == .resourceExhausted && error?.message.contains("resume") == true)
        log.feed.subscribers.unsubscribe(subscription)
        #expect(log.feed.subscribers.count(of: "o") == 0)
    }

    @Test("full-jitter backoff stays under its exponential ceiling and its cap")
    func backoff() {
        let backoff = ReconnectBackoff(initial: .milliseconds(100), multiplier: 2, maximum: .seconds(1))
        #expect(backoff.ceiling(attempt: 1) == .milliseconds(100))
        #expect(backoff.ceiling(attempt: 3) == .milliseconds(400))
        #expect(backoff.ceiling(attempt: 30) == .seconds(1))
        var generator = SystemRandomNumberGenerator()
        for attempt in 1...10 {
            let delay = backoff.delay(attempt: attempt, using: &generator)
            #expect(delay >= .zero && delay <= backoff.ceiling(attempt: attempt))
        }
    }
}
