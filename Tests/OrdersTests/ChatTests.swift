import Foundation
import LiveChat
import Orders
import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

typealias ChatClient = Chat_V1_ChatRoom.Client<HTTP2ClientTransport>

/// The chat rooms on the real `orders-server`.
@Suite("orders-server: chat", .timeLimit(.minutes(5)))
struct ChatTests {
    /// One participant: joins, waits for `go`, sends `texts`, and reads until it has seen
    /// `expecting` messages; returns every message it received.
    static func participant(_ chat: ChatClient, room: String, nickname: String, texts: [String], expecting: Int,
                            joined: AsyncStream<String>.Continuation, go: AsyncStream<Void>) async throws -> [ChatMessage] {
        let (done, finish) = AsyncStream.makeStream(of: Void.self)
        return try await chat.chat { writer in
            try await writer.write(.with { $0.join = .with { $0.room = room; $0.nickname = nickname } })
            for await _ in go { break }
            for text in texts { try await writer.write(.with { $0.send = .with { $0.text = text } }) }
            for await _ in done {}  // keep the stream open until everything arrived
        } onResponse: { response in
            defer { finish.finish() }
            var messages: [ChatMessage] = []
            for try await event in response.messages {
                switch event.event {
                case .joined: joined.yield(nickname)
                case .message(let message):
                    messages.append(message)
                    if messages.count == expecting { return messages }
                case .presence, nil: break
                }
            }
            return messages
        }
    }

    @Test("50 participants: each receives every message, all in the same order, ids 1...n", arguments: TestBackend.allCases)
    func fiftyParticipants(backend: TestBackend) async throws {
        try await OrdersServer.with(backend: backend) { server in
            let people = 50, perPerson = 4
            let total = people * perPerson
            let (joined, joinedSink) = AsyncStream.makeStream(of: String.self)
            var goes: [AsyncStream<Void>.Continuation] = []
            let received = Locked<[String: [ChatMessage]]>([:])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for person in 0..<people {
                    let (go, goSink) = AsyncStream.makeStream(of: Void.self)
                    goes.append(goSink)
                    group.addTask {
                        try await server.withClient(token: nil) { client in
                            let messages = try await Self.participant(
                                ChatClient(wrapping: client), room: "lobby", nickname: "p\(person)",
                                texts: (0..<perPerson).map { "p\(person) says \($0)" }, expecting: total, joined: joinedSink, go: go)
                            received.withLock { $0["p\(person)"] = messages }
                        }
                    }
                }
                // Everyone is in before anyone speaks, so everyone should hear everything.
                var count = 0
                for await _ in joined {
                    count += 1
                    if count == people { break }
                }
                for go in goes { go.yield() }
                try await group.waitForAll()
            }
            let all = received.value
            #expect(all.count == people)
            let reference = try #require(all["p0"])
            #expect(reference.map(\.id) == Array(1...Int64(total)))
            for (name, messages) in all {
                #expect(firstDifference(messages.map(\.id), reference.map(\.id)) == nil, "\(name)")
                #expect(firstDifference(messages.map(\.text), reference.map(\.text)) == nil, "\(name)")
            }
            for person in 0..<people {
                let mine = reference.filter { $0.nickname == "p\(person)" }.map(\.text)
                #expect(mine == (0..<perPerson).map { "p\(person) says \($0)" })
            }
        }
    }

    @Test("joining gets the last messages and presence; a taken nickname is ALREADY_EXISTS; messages survive a restart", arguments: TestBackend.allCases)
    func historyPresenceAndRestart(backend: TestBackend) async throws {
        try await OrdersServer.with(["--chat-history", "3"], backend: backend) { server in
            try await server.withClient(token: nil) { client in
                let chat = ChatClient(wrapping: client)
                let (leave, left) = AsyncStream.makeStream(of: Void.self)
                let (events, eventSink) = AsyncStream.makeStream(of: ChatEvent.self)
                let first = Task {
                    try await chat.chat { writer in
                        try await writer.write(.with { $0.join = .with { $0.room = "r"; $0.nickname = "ada" } })
                        for text in ["one", "two", "three", "four"] { try await writer.write(.with { $0.send = .with { $0.text = text } }) }
                        for await _ in leave {}
                    } onResponse: { response in
                        for try await event in response.messages { eventSink.yield(event) }
                    }
                }
                var iterator = events.makeAsyncIterator()
                var seen = 0
                while seen < 4, let event = await iterator.next() { if case .message = event.event { seen += 1 } }

                let duplicate = await rpcError {
                    try await chat.chat { writer in
                        try await writer.write(.with { $0.join = .with { $0.room = "r"; $0.nickname = "ada" } })
                    } onResponse: { response in for try await _ in response.messages {} }
                }
                #expect(duplicate?.code == .alreadyExists)

                let history = try await Self.joinAndReadHistory(chat, room: "r", nickname: "grace", count: 3)
                #expect(history.participants == ["ada", "grace"])
                #expect(history.messages.map(\.text) == ["two", "three", "four"])
                #expect(history.messages.map(\.id) == [2, 3, 4])
                // Ada heard Grace come and go.
                var presence: [Chat_V1_Presence] = []
                while presence.count < 2, let event = await iterator.next() {
                    if case .presence(let change) = event.event { presence.append(change) }
                }
                #expect(presence.map(\.nickname) == ["grace", "grace"] && presence.map(\.change) == [.joined, .left])
                left.finish()
                try await first.value
            }
            await server.stop()
            try await server.restart()
            try await server.withClient(token: nil) { client in
                let history = try await Self.joinAndReadHistory(ChatClient(wrapping: client), room: "r", nickname: "ada", count: 3)
                #expect(history.messages.map(\.text) == ["two", "three", "four"])
            }
        }
    }

    /// Joins, reads the `joined` answer and `count` history messages, then leaves.
    static func joinAndReadHistory(_ chat: ChatClient, room: String, nickname: String, count: Int) async throws
        -> (participants: [String], messages: [ChatMessage]) {
        let (done, finish) = AsyncStream.makeStream(of: Void.self)
        return try await chat.chat { writer in
            try await writer.write(.with { $0.join = .with { $0.room = room; $0.nickname = nickname } })
            for await _ in done {}
        } onResponse: { response in
            defer { finish.finish() }
            var participants: [String] = []
            var messages: [ChatMessage] = []
            for try await event in response.messages {
                switch event.event {
                case .joined(let joined): participants = joined.participants
                case .message(let message): messages.append(message)
                case .presence, nil: break
                }
                if messages.count == count { break }
            }
            return (participants, messages)
        }
    }

    @Test("a participant that stops reading is disconnected with RESOURCE_EXHAUSTED, and the room hears it left",
          arguments: TestBackend.allCases)
    func slowParticipant(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        var settings = ChatRooms.Settings()
        settings.backlog = 8
        let rooms = try ChatRooms(database: try await backend.makeDatabase(in: directory), settings: settings)
        let slow = try rooms.join(room: "r", nickname: "slow", mailbox: rooms.makeMailbox())
        let fast = try rooms.join(room: "r", nickname: "fast", mailbox: rooms.makeMailbox())
        var events: [ChatEvent] = []  // what the fast one reads as it goes
        for index in 0..<20 {
            try await rooms.send("m\(index)", from: fast)
            while let event = fast.mailbox.poll() { events.append(event) }
        }
        #expect(rooms.participants(in: "r") == ["fast"])
        #expect(events.contains { if case .presence(let change) = $0.event { change.nickname == "slow" && change.change == .left } else { false } })
        // The slow one reads what was queued, then the status.
        let error = await rpcError { while try await slow.mailbox.next() != nil {} }
        #expect(error?.code == .resourceExhausted && error?.message.contains("behind") == true)
    }
}

@Suite("OrderLog, OrderFeed, Mailbox", .timeLimit(.minutes(5)))
struct MailboxTests {
    @Test("group commit: concurrent publishes share transactions, each order numbered 1...n, a failing one fails alone",
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
        #expect(results.filter { $0.0 == "missing" }.allSatisfy { if case .failure(let error) = $0.1 { error.code == .notFound } else { false } })
        // The epoch and the log survive reopening.
        let reopened = try OrderLog(database: database)
        #expect(reopened.epoch == log.epoch)
        #expect(try await reopened.header(of: "a")?.lastSequence == 100)
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

    @Test("age retention: updates older than maxAge are pruned; resuming before them is OUT_OF_RANGE, from the latest is fine",
          arguments: TestBackend.allCases)
    func ageRetention(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let database = try await backend.makeDatabase(in: directory)
        let log = try OrderLog(database: database, retention: .init(maxUpdatesPerOrder: 1_000, maxAge: .nanoseconds(1)))
        _ = try await log.createOrder(id: "o", customerID: "c", etaDisplay: "")
        var published: [LoggedUpdate] = []
        for index in 0..<3 { published.append(try await log.publish(.etaChanged(.with { $0.etaDisplay = "\(index)" }), to: "o")) }
        let error = await #expect(throws: RPCError.self) { try await log.startSequence(for: "o", since: published[0].message.updateID) }
        #expect(error?.code == .outOfRange && error?.message.contains("GetOrder") == true)
        #expect(try await log.startSequence(for: "o", since: published[2].message.updateID) == 3)
        #expect(try await log.header(of: "o")?.prunedThrough == 3)
        #expect(try await log.snapshot(of: "o")?.etaDisplay == "2")
    }

    @Test("a watcher too far behind the feed is ended with RESOURCE_EXHAUSTED; the feed forgets it", arguments: TestBackend.allCases)
    func slowWatcher(backend: TestBackend) async throws {
        let feed = OrderFeed(bufferLimit: 4)
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let log = try OrderLog(database: try await backend.makeDatabase(in: directory))
        _ = try await log.createOrder(id: "o", customerID: "c", etaDisplay: "")
        let subscription = feed.subscribe(to: "o")
        for index in 0..<6 {
            _ = try await log.publish(.etaChanged(.with { $0.etaDisplay = "\(index)" }), to: "o") { feed.deliver($0, for: "o") }
        }
        let error = await rpcError { while try await subscription.next() != nil {} }
        #expect(error?.code == .resourceExhausted && error?.message.contains("resume") == true)
        feed.unsubscribe(subscription)
        #expect(feed.subscriberCount(of: "o") == 0)
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
