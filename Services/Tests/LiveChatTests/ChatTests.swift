import Foundation
import LiveChat
import Orders
import PitlaneCore
import PitlaneHTTP2
import PitlaneSQLite
import ServiceHarness
import TestSupport
import Testing

/// The chat rooms on the real `orders-server`.
@Suite("orders-server: chat", .timeLimit(.minutes(5)))
struct ChatTests {
    /// One participant: joins, waits for `go`, sends `texts`, and reads until it has seen
    /// `expecting` messages; returns every message it received.
    static func participant(
        _ chat: ChatClient, room: String, nickname: String, texts: [String], expecting: Int,
        joined: AsyncStream<String>.Continuation, go: AsyncStream<Void>
    ) async throws -> [ChatMessage] {
        let (done, finish) = AsyncStream.makeStream(of: Void.self)
        return try await chat.chat { writer in
            try await writer.write(
                .with {
                    $0.join = .with {
                        $0.room = room
                        $0.nickname = nickname
                    }
                })
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
            let people = 50
            let perPerson = 4
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

    @Test(
        "joining gets the last messages and presence; a taken nickname is ALREADY_EXISTS; messages survive a restart",
        arguments: TestBackend.allCases)
    func historyPresenceAndRestart(backend: TestBackend) async throws {
        try await OrdersServer.with(["--chat-history", "3"], backend: backend) { server in
            try await server.withClient(token: nil) { client in
                let chat = ChatClient(wrapping: client)
                let (leave, left) = AsyncStream.makeStream(of: Void.self)
                let (events, eventSink) = AsyncStream.makeStream(of: ChatEvent.self)
                let first = Task {
                    try await chat.chat { writer in
                        try await writer.write(
                            .with {
                                $0.join = .with {
                                    $0.room = "r"
                                    $0.nickname = "ada"
                                }
                            })
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
                        try await writer.write(
                            .with {
                                $0.join = .with {
                                    $0.room = "r"
                                    $0.nickname = "ada"
                                }
                            })
                    } onResponse: { response in
                        for try await _ in response.messages {}
                    }
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
    static func joinAndReadHistory(
        _ chat: ChatClient, room: String, nickname: String, count: Int
    ) async throws
        -> (participants: [String], messages: [ChatMessage])
    {
        let (done, finish) = AsyncStream.makeStream(of: Void.self)
        return try await chat.chat { writer in
            try await writer.write(
                .with {
                    $0.join = .with {
                        $0.room = room
                        $0.nickname = nickname
                    }
                })
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

    @Test(
        "a participant that stops reading is disconnected with RESOURCE_EXHAUSTED, and the room hears it left",
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
        #expect(
            events.contains {
                if case .presence(let change) = $0.event { change.nickname == "slow" && change.change == .left } else { false }
            })
        // The slow one reads what was queued, then the status.
        let error = await rpcError { while try await slow.mailbox.next() != nil {} }
        #expect(error?.code == .resourceExhausted && error?.message.contains("behind") == true)
    }

    @Test("rooms from before PitlaneLive move into the feed: history, ids and senders kept, numbering carries on")
    func migratesOldRooms() async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let path = directory.path + "/chat.sqlite"
        // Schema version 3 of the chat, as the server before PitlaneLive left it.
        try await SQLiteStore(path: path).withConnection { connection in
            try connection.execute(
                """
                CREATE TABLE pitlane_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
                INSERT INTO pitlane_schema VALUES ('chat', 3);
                CREATE TABLE chat_messages (
                    room TEXT NOT NULL, id INTEGER NOT NULL, nickname TEXT NOT NULL, text TEXT NOT NULL, sent_at INTEGER NOT NULL,
                    sender_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (room, id)
                ) WITHOUT ROWID;
                CREATE TABLE chat_rooms (room TEXT PRIMARY KEY, last_id INTEGER NOT NULL) WITHOUT ROWID;
                INSERT INTO chat_messages VALUES ('r', 1, 'ann', 'hello', 1700000000000000000, 'a-1');
                INSERT INTO chat_messages VALUES ('r', 2, 'bob', 'hi ann', 1700000001000000000, '');
                INSERT INTO chat_rooms VALUES ('r', 2);
                """)
        }
        let rooms = try ChatRooms(path: path)
        let cid = try rooms.join(room: "r", nickname: "cid", mailbox: rooms.makeMailbox())
        var history: [ChatMessage] = []
        while let event = cid.mailbox.poll() {
            if case .message(let message) = event.event { history.append(message) }
        }
        #expect(history.map(\.id) == [1, 2])
        #expect(history.map(\.text) == ["hello", "hi ann"])
        #expect(history.map(\.nickname) == ["ann", "bob"] && history[0].senderID == "a-1")
        #expect(history[1].sentAt.seconds == 1_700_000_001)
        #expect(try await rooms.send("hey", from: cid).id == 3)
        // Opened again: nothing is moved twice.
        let again = try ChatRooms(path: path)
        let dee = try again.join(room: "r", nickname: "dee", mailbox: again.makeMailbox())
        var seen: [Int64] = []
        while let event = dee.mailbox.poll() {
            if case .message(let message) = event.event { seen.append(message.id) }
        }
        #expect(seen == [1, 2, 3])
    }
}
