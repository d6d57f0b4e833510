import PitlaneCore
import PitlaneErrorDetails
import PitlaneSQL
import Synchronization
import TestSupport
import Testing

@testable import PitlaneLive

/// The durable log and its subscriptions, on both databases: numbering per key under
/// concurrent appends (group commit), resuming from every position, epochs, retention by count
/// and by age on a manual clock, the apply hook's failures, slow subscribers under each policy,
/// presence, and wake-ups across replicas (PostgreSQL).
@Suite("Feed log", .timeLimit(.minutes(2)))
struct FeedLogTests {
    static let names = FeedNames(domain: "feeds.example.com", keyField: "key", noun: "thing", restart: "start over")

    func withLog<T>(
        _ backend: TestBackend, keys: FeedLog.Keys = .createdOnAppend, retention: FeedLog.Retention = .unlimited,
        subscribers: FeedLog.Subscribers? = nil, timeSource: TimeSource = .continuous,
        _ body: (FeedLog) async throws -> T
    ) async throws -> T {
        let directory = try TemporaryDirectory()
        let database = try await backend.makeDatabase(in: directory)
        let log = try FeedLog(
            name: "things", database: database, names: Self.names, keys: keys, retention: retention, subscribers: subscribers,
            timeSource: timeSource)
        return try await body(log)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func text(_ entry: FeedLog.Entry) -> String { String(decoding: entry.payload, as: UTF8.self) }

    @Test("concurrent appends to three keys: each key numbered 1...n in one order, read back as appended", arguments: TestBackend.allCases)
    func numbering(backend: TestBackend) async throws {
        try await withLog(backend) { log in
            let appended = try await withThrowingTaskGroup(of: FeedLog.Entry.self) { group in
                for index in 0..<120 {
                    group.addTask { try await log.append(Self.bytes("m\(index)"), to: "k\(index % 3)") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for key in ["k0", "k1", "k2"] {
                let mine = appended.filter { $0.key == key }.sorted { $0.sequence < $1.sequence }
                #expect(mine.map(\.sequence) == Array(1...40))
                let read = try await log.entries(of: key, after: 0, limit: 100)
                #expect(read.map(Self.text) == mine.map(Self.text))
                #expect(try await log.state(of: key) == FeedLog.KeyState(lastSequence: 40, prunedThrough: 0))
            }
        }
    }

    @Test("a subscription resumes from every position: exactly the updates after it, in order", arguments: TestBackend.allCases)
    func resumeFromEveryPoint(backend: TestBackend) async throws {
        try await withLog(backend) { log in
            for index in 1...6 { try await log.append(Self.bytes("u\(index)"), to: "k") }
            #expect(try await log.start(of: "k", after: "") == 6)
            for sequence in Int64(0)...6 {
                let start = try await log.start(of: "k", after: log.position(of: "k", sequence: sequence).token)
                #expect(start == sequence)
                let rest = try await log.entries(of: "k", after: start)
                #expect(rest.map(\.sequence) == Array((sequence + 1)..<7))
            }
        }
    }

    @Test(
        "bad tokens: another epoch, not a token, another key's, ahead of the log; a key never written to is empty",
        arguments: TestBackend.allCases)
    func badTokens(backend: TestBackend) async throws {
        try await withLog(backend) { log in
            try await log.append(Self.bytes("one"), to: "k")
            try await log.append(Self.bytes("other"), to: "j")
            func reason(_ token: String, key: String = "k") async -> (FeedError.Reason, RPCError.Code)? {
                do {
                    _ = try await log.start(of: key, after: token)
                    return nil
                } catch let error as FeedError {
                    return (error.reason, error.code)
                } catch {
                    return nil
                }
            }
            let foreign = FeedPosition(epoch: log.epoch ^ 1, key: "k", sequence: 1).token
            #expect(await reason(foreign)! == (.epochChanged, .outOfRange))
            #expect(await reason("not a token")! == (.malformedToken, .invalidArgument))
            #expect(await reason(log.position(of: "j", sequence: 1).token)! == (.tokenOfAnotherKey, .invalidArgument))
            #expect(await reason(log.position(of: "k", sequence: 2).token)! == (.tokenAhead, .invalidArgument))
            #expect(try await log.start(of: "nobody", after: "") == 0)
        }
    }

    @Test("the epoch is kept in the database: a log opened again on it has the same one", arguments: TestBackend.allCases)
    func epochPersists(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        let database = try await backend.makeDatabase(in: directory)
        let first = try FeedLog(name: "things", database: database, names: Self.names)
        let again = try FeedLog(name: "things", database: database, names: Self.names)
        let other = try FeedLog(name: "others", database: database, names: Self.names)
        #expect(first.epoch == again.epoch && first.epoch != 0)
        #expect(other.epoch != first.epoch)
    }

    @Test("retention by count: the oldest are dropped; resuming from before them is OUT_OF_RANGE", arguments: TestBackend.allCases)
    func retentionByCount(backend: TestBackend) async throws {
        try await withLog(backend, retention: .init(maxEntriesPerKey: 3, maxAge: nil)) { log in
            for index in 1...5 { try await log.append(Self.bytes("u\(index)"), to: "k") }
            #expect(try await log.state(of: "k") == FeedLog.KeyState(lastSequence: 5, prunedThrough: 2))
            #expect(try await log.entries(of: "k", after: 2).map(\.sequence) == [3, 4, 5])
            let error = await #expect(throws: FeedError.self) {
                try await log.start(of: "k", after: log.position(of: "k", sequence: 1).token)
            }
            #expect(error?.reason == .notRetained && error?.code == .outOfRange)
            #expect(error?.metadata["oldest_retained_update_id"] == log.position(of: "k", sequence: 2).token)
            #expect(try await log.start(of: "k", after: log.position(of: "k", sequence: 2).token) == 2)
        }
    }

    @Test("retention by age on a manual clock: a key nobody writes to is pruned when read", arguments: TestBackend.allCases)
    func retentionByAge(backend: TestBackend) async throws {
        let clock = ManualClock()
        try await withLog(backend, retention: .init(maxEntriesPerKey: nil, maxAge: .seconds(60)), timeSource: .manual(clock)) { log in
            try await log.append(Self.bytes("old"), to: "k")
            clock.advance(by: .seconds(45))
            try await log.append(Self.bytes("newer"), to: "k")
            let first = log.position(of: "k", sequence: 0).token
            #expect(try await log.start(of: "k", after: first) == 0)
            clock.advance(by: .seconds(30))  // the first is 75 s old, the second 30 s
            await #expect(throws: FeedError.self) { try await log.start(of: "k", after: first) }
            #expect(try await log.entries(of: "k", after: 1).map(Self.text) == ["newer"])
            clock.advance(by: .seconds(60))
            #expect(try await log.start(of: "k", after: log.position(of: "k", sequence: 2).token) == 2)
            #expect(try await log.state(of: "k")?.prunedThrough == 2)
        }
    }

    @Test("the apply hook: its failure fails that append alone; explicit keys must exist", arguments: TestBackend.allCases)
    func applyHook(backend: TestBackend) async throws {
        try await withLog(backend, keys: .createdExplicitly) { log in
            _ = try await log.database.transaction { try log.createKey("k", in: $0) }
            #expect(try await log.database.transaction { try log.createKey("k", in: $0) } == false)
            struct Refused: Error {}
            let results = await withTaskGroup(of: Result<Int64, any Error>.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        do {
                            let entry = try await log.append(Self.bytes("\(index)"), to: "k") { _, _ in
                                if index == 3 { throw Refused() }
                            }
                            return .success(entry.sequence)
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { (try? $0.get()) == nil }.count == 1)
            #expect(try await log.entries(of: "k", after: 0).map(\.sequence) == Array(1...9))
            let unknown = await #expect(throws: FeedError.self) { try await log.append(Self.bytes("x"), to: "nobody") }
            #expect(unknown?.reason == .unknownKey)
            let unread = await #expect(throws: FeedError.self) { try await log.start(of: "nobody", after: "") }
            #expect(unread?.reason == .unknownKey && unread?.code == .notFound)
        }
    }

    @Test("a stream sends the backlog, then live updates, each once and in order", arguments: TestBackend.allCases)
    func streamBacklogThenLive(backend: TestBackend) async throws {
        try await withLog(backend) { log in
            for index in 1...3 { try await log.append(Self.bytes("u\(index)"), to: "k") }
            let received = Mutex<[Int64]>([])
            let caughtUp = Mutex<[Int64]>([])
            let stream = Task {
                try await FeedStream(log: log, key: "k", member: "ann").run(after: 1) { entry in
                    received.withLock { $0.append(entry.sequence) }
                } caughtUp: { through in
                    caughtUp.withLock { $0.append(through) }
                }
            }
            try await eventually { caughtUp.withLock { $0.contains(3) } }
            #expect(log.subscribers.members(of: "k") == ["ann"])
            for index in 4...8 { try await log.append(Self.bytes("u\(index)"), to: "k") }
            try await eventually { received.withLock { $0.last == 8 } }
            #expect(received.withLock { $0 } == Array(2...8))
            stream.cancel()
            _ = await stream.result
            #expect(log.subscribers.members(of: "k").isEmpty && log.subscribers.count == 0)
        }
    }

    @Test("a subscriber that falls behind catches up from the log, missing nothing", arguments: TestBackend.allCases)
    func slowSubscriberCatchesUp(backend: TestBackend) async throws {
        let subscribers = FeedLog.Subscribers(bufferLimit: 2, overflow: .catchUp, names: Self.names)
        try await withLog(backend, subscribers: subscribers) { log in
            let gate = AsyncGate()
            let received = Mutex<[Int64]>([])
            let stream = Task {
                try await FeedStream(log: log, key: "k").run(after: 0) { entry in
                    await gate.wait()
                    received.withLock { $0.append(entry.sequence) }
                }
            }
            try await eventually { subscribers.count(of: "k") == 1 }
            for index in 1...20 { try await log.append(Self.bytes("u\(index)"), to: "k") }
            gate.open()
            try await eventually { received.withLock { $0.last == 20 } }
            #expect(received.withLock { $0 } == Array(1...20))
            stream.cancel()
            _ = await stream.result
        }
    }

    @Test("a subscriber that never reads, under the end policy: RESOURCE_EXHAUSTED with RetryInfo, others unaffected")
    func slowSubscriberEnds() async throws {
        let subscribers = FeedLog.Subscribers(bufferLimit: 4, overflow: .end, names: Self.names)
        try await withLog(.sqlite, subscribers: subscribers) { log in
            let stuck = subscribers.subscribe(to: "k")
            let reader = subscribers.subscribe(to: "k")
            for index in 1...5 {
                try await log.append(Self.bytes("u\(index)"), to: "k")
                guard case .update(let entry)? = try await reader.next() else {
                    Issue.record("reader missed \(index)")
                    return
                }
                #expect(entry.sequence == Int64(index))
            }
            let error = await #expect(throws: FeedError.self) { _ = try await stuck.next() }
            #expect(error?.reason == .subscriberTooSlow && error?.rpcError.code == .resourceExhausted)
            #expect(error?.rpcError.detail(Google_Rpc_RetryInfo.self) != nil)
            subscribers.unsubscribe(stuck)
            subscribers.unsubscribe(reader)
        }
    }

    @Test("shutting down ends every subscription and later ones with its error")
    func shutdown() async throws {
        let subscribers = FeedLog.Subscribers(names: Self.names)
        let before = subscribers.subscribe(to: "k")
        subscribers.shutdown(RPCError(code: .unavailable, message: "bye"))
        let after = subscribers.subscribe(to: "k")
        for subscription in [before, after] {
            await #expect(throws: RPCError.self) { _ = try await subscription.next() }
        }
        #expect(subscribers.count == 0)
    }

    @Test("two replicas of one PostgreSQL database: a stream on one gets what the other commits, in order")
    func acrossReplicas() async throws {
        let url = try await TestPostgres.freshDatabase()
        let one = try FeedLog(name: "things", database: try TestBackend.postgresDatabase(url), names: Self.names)
        let two = try FeedLog(name: "things", database: try TestBackend.postgresDatabase(url), names: Self.names)
        #expect(one.epoch == two.epoch)
        let reachable = Mutex(false)
        let relay = two.relay(onChange: { up in reachable.withLock { $0 = up } })
        let listening = try #require(relay)
        defer { listening.stop() }
        try await eventually { reachable.withLock { $0 } }
        let received = Mutex<[String]>([])
        let stream = Task {
            try await FeedStream(log: two, key: "k").run(after: 0) { entry in received.withLock { $0.append(Self.text(entry)) } }
        }
        try await eventually { two.subscribers.count(of: "k") == 1 }
        for index in 1...10 { try await one.append(Self.bytes("u\(index)"), to: "k") }
        try await eventually { received.withLock { $0.count == 10 } }
        #expect(received.withLock { $0 } == (1...10).map { "u\($0)" })
        stream.cancel()
        _ = await stream.result
    }
}

/// Holds callers until opened.
final class AsyncGate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let proceed = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if proceed { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
