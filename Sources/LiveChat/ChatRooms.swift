import Dispatch
import Glibc
import Orders
import PitlaneCore
import PitlaneProtobuf
import PitlaneSQLite
import Synchronization

public typealias ChatEvent = Chat_V1_ChatEvent
public typealias ChatMessage = Chat_V1_ChatMessage

/// The chat rooms: messages stored in SQLite, numbered per room, and everyone in a room.
///
/// One lock orders everything that happens in the rooms: a message is stored and queued for
/// every participant of its room in the same critical section, and so are joins (the history a
/// joiner gets is read there too) and leaves — so every participant sees one order per room,
/// with nothing missed or repeated between the history and the live messages. Each
/// participant's queue is bounded; one that falls `backlog` events behind is disconnected with
/// `.resourceExhausted` and the room hears that it left.
public final class ChatRooms: Sendable {
    public struct Settings: Sendable {
        /// Messages a joiner gets from before it joined.
        public var history = 50
        /// Events a participant may fall behind before it is disconnected.
        public var backlog = 1_024
        public init() {}
    }

    /// Someone in a room: what the server sends them waits in `mailbox`. A gRPC participant
    /// has its nickname from the join; a WebSocket client of the seed's protocol (a
    /// ``listen(room:mailbox:)``) takes one with its first message.
    public struct Participant: Sendable {
        public let room: String
        /// The nickname given at the join; nil for a listener.
        public let nickname: String?
        public let mailbox: BoundedMailbox<ChatEvent>
        /// Tells participants apart, nicknames or not.
        let key: UInt64
    }

    /// A participant as the rooms know it now.
    private struct Member {
        let participant: Participant
        /// nil until a listener says something.
        var nickname: String?
    }

    private struct Rooms: ~Copyable {
        var database: SQLiteDatabase
        var members: [String: [UInt64: Member]] = [:]
        var nextKey: UInt64 = 0

        mutating func makeKey() -> UInt64 {
            nextKey += 1
            return nextKey
        }

        func member(named nickname: String, in room: String) -> Member? {
            members[room]?.values.first { $0.nickname == nickname }
        }

        func nicknames(in room: String) -> [String] {
            (members[room] ?? [:]).values.compactMap(\.nickname).sorted()
        }
    }

    public let settings: Settings
    private let rooms: Mutex<Rooms>
    private let waiting = Mutex(WaitingSends())
    /// Where sends are committed, away from the event loops.
    private let writer = DispatchQueue(label: "pitlane.chat.writer")

    /// Opens (creating) the message store at `path`.
    public init(path: String, settings: Settings = Settings()) throws {
        let database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA journal_mode = WAL")
        // The file may be shared with the order log, whose migrations own `user_version`.
        try database.execute("""
            CREATE TABLE IF NOT EXISTS chat_messages (
                room TEXT NOT NULL,
                id INTEGER NOT NULL,
                nickname TEXT NOT NULL,
                text TEXT NOT NULL,
                sent_at INTEGER NOT NULL,
                PRIMARY KEY (room, id)
            ) WITHOUT ROWID
            """)
        // Added with the seed's WebSocket chat: the id its clients give themselves.
        let columns = try database.prepare("SELECT count(*) FROM pragma_table_info('chat_messages') WHERE name = 'sender_id'")
        _ = try columns.step()
        if columns.int64(at: 0) == 0 {
            try database.execute("ALTER TABLE chat_messages ADD COLUMN sender_id TEXT NOT NULL DEFAULT ''")
        }
        self.settings = settings
        rooms = Mutex(Rooms(database: database))
    }

    /// A mailbox bounded by `settings.backlog`, for `join`.
    public func makeMailbox() -> BoundedMailbox<ChatEvent> {
        Mailbox(limit: settings.backlog) { limit in
            RPCError(code: .resourceExhausted, message: "you fell more than \(limit) events behind the room and were disconnected; join again")
        }
    }

    /// Joins `room` as `nickname`, receiving into `mailbox` (from `makeMailbox()`): it starts
    /// with `joined` and the last `history` messages; the others hear of the join.
    public func join(room: String, nickname: String, mailbox: BoundedMailbox<ChatEvent>) throws -> Participant {
        guard !room.isEmpty, !nickname.isEmpty else {
            throw RPCError(code: .invalidArgument, message: "joining needs a room and a nickname")
        }
        return try rooms.withLock { rooms in
            guard rooms.member(named: nickname, in: room) == nil else {
                throw RPCError(code: .alreadyExists, message: "'\(nickname)' is already in \(room)")
            }
            let history = try Self.recent(room, count: settings.history, in: rooms.database)
            let participant = Participant(room: room, nickname: nickname, mailbox: mailbox, key: rooms.makeKey())
            rooms.members[room, default: [:]][participant.key] = Member(participant: participant, nickname: nickname)
            let participants = rooms.nicknames(in: room)
            participant.mailbox.offer(.with { $0.joined = .with { $0.room = room; $0.participants = participants } })
            for message in history { participant.mailbox.offer(.with { $0.message = message }) }
            Self.broadcast(Self.presence(nickname, .joined), to: room, except: participant.key, in: &rooms)
            return participant
        }
    }

    /// Enters `room` without a nickname, as a client of the seed's WebSocket chat does: it
    /// receives what is said from now on; the room hears of it once it says something.
    public func listen(room: String, mailbox: BoundedMailbox<ChatEvent>) -> Participant {
        rooms.withLock { rooms in
            let participant = Participant(room: room, nickname: nil, mailbox: mailbox, key: rooms.makeKey())
            rooms.members[room, default: [:]][participant.key] = Member(participant: participant, nickname: nil)
            return participant
        }
    }

    /// Leaves the room; the others hear of it.
    public func leave(_ participant: Participant) {
        rooms.withLock { rooms in
            Self.remove(participant.key, from: participant.room, in: &rooms)
        }
        participant.mailbox.end(.finished)
    }

    /// Stores a message and queues it for everyone in the room, the sender included; returns
    /// once it is committed and queued.
    @discardableResult
    public func send(_ text: String, from participant: Participant) async throws -> ChatMessage {
        try await send(SendRequest(participant: participant, text: text, nickname: nil, senderID: ""))
    }

    /// Sends as a client of the seed's WebSocket chat, which names itself in every message:
    /// `nickname` (the room hears that it joined, the first time) and `senderID`, the id the
    /// client gave itself, which the message carries back to it.
    @discardableResult
    public func send(_ text: String, from participant: Participant, nickname: String, senderID: String) async throws -> ChatMessage {
        guard !nickname.isEmpty else { throw RPCError(code: .invalidArgument, message: "a message needs a nickname") }
        guard nickname.utf8.count <= 64 else { throw RPCError(code: .invalidArgument, message: "nicknames are at most 64 bytes") }
        guard senderID.utf8.count <= 256 else { throw RPCError(code: .invalidArgument, message: "ids are at most 256 bytes") }
        return try await send(SendRequest(participant: participant, text: text, nickname: nickname, senderID: senderID))
    }

    private struct SendRequest {
        let participant: Participant
        let text: String
        /// The nickname a seed client gives with the message; nil for gRPC participants.
        let nickname: String?
        let senderID: String
    }

    /// Sends wait here for the writer; it takes all that waits as one batch.
    private struct WaitingSends: ~Copyable {
        var sends: [(SendRequest, CheckedContinuation<ChatMessage, any Error>)] = []
        var writing = false
    }

    private func send(_ request: SendRequest) async throws -> ChatMessage {
        guard !request.text.isEmpty else { throw RPCError(code: .invalidArgument, message: "a message needs text") }
        guard request.text.utf8.count <= 4_096 else { throw RPCError(code: .invalidArgument, message: "messages are at most 4096 bytes") }
        return try await withCheckedThrowingContinuation { continuation in
            let startWriter = waiting.withLock { waiting in
                waiting.sends.append((request, continuation))
                defer { waiting.writing = true }
                return !waiting.writing
            }
            if startWriter { writer.async { self.writeWaitingSends() } }
        }
    }

    /// On the writer's queue, never an event loop: a commit waits for the disk (with
    /// `synchronous = FULL`, for an fsync), and the messages that arrive meanwhile go in the
    /// next commit together — a burst of a thousand messages is a few commits, not a thousand.
    private func writeWaitingSends() {
        while true {
            let batch = waiting.withLock { waiting in
                defer { waiting.sends = [] }
                if waiting.sends.isEmpty { waiting.writing = false }
                return waiting.sends
            }
            guard !batch.isEmpty else { return }
            let results = rooms.withLock { rooms in store(batch.map(\.0), in: &rooms) }
            for ((_, continuation), result) in zip(batch, results) { continuation.resume(with: result) }
        }
    }

    /// Stores a batch in one transaction and queues its messages in order; inside the lock, so
    /// that no join reads the history between the commit and the broadcast.
    private func store(_ batch: [SendRequest], in rooms: inout Rooms) -> [Result<ChatMessage, any Error>] {
        let now = Self.now()
        var results: [Result<ChatMessage, any Error>] = []
        var nextIDs: [String: Int64] = [:]
        do {
            // BEGIN IMMEDIATE waits out the order log's writers on the same file.
            try rooms.database.transaction {
                for request in batch {
                    let room = request.participant.room
                    guard var member = rooms.members[room]?[request.participant.key] else {
                        results.append(.failure(RPCError(code: .failedPrecondition, message: "not in \(room)")))
                        continue
                    }
                    if let named = request.nickname, member.nickname != named {
                        let first = member.nickname == nil
                        member.nickname = named
                        rooms.members[room]?[request.participant.key] = member
                        if first { Self.broadcast(Self.presence(named, .joined), to: room, except: request.participant.key, in: &rooms) }
                    }
                    let id = try nextIDs[room] ?? Self.nextMessageID(in: room, of: rooms.database)
                    nextIDs[room] = id + 1
                    let message = ChatMessage.with {
                        $0.id = id
                        $0.nickname = member.nickname ?? ""
                        $0.text = request.text
                        $0.sentAt = now
                        $0.senderID = request.senderID
                    }
                    try rooms.database.prepare("""
                        INSERT INTO chat_messages (room, id, nickname, text, sent_at, sender_id) VALUES (?, ?, ?, ?, ?, ?)
                        """)
                        .bind(.text(room), .integer(message.id), .text(message.nickname), .text(message.text),
                              .integer(now.seconds * 1_000_000_000 + Int64(now.nanos)), .text(request.senderID))
                        .run()
                    results.append(.success(message))
                }
            }
        } catch {
            return batch.map { _ in .failure(error) }
        }
        for (request, result) in zip(batch, results) {
            guard case .success(let message) = result else { continue }
            Self.broadcast(.with { $0.message = message }, to: request.participant.room, except: nil, in: &rooms)
        }
        return results
    }

    /// The id the next message of `room` gets; its statement is finished before it returns.
    private static func nextMessageID(in room: String, of database: SQLiteDatabase) throws -> Int64 {
        let next = try database.prepare("SELECT coalesce(max(id), 0) + 1 FROM chat_messages WHERE room = ?")
        try next.bind(.text(room))
        _ = try next.step()
        return next.int64(at: 0)
    }

    /// Rooms with someone in them, and everyone in them (listeners too), for metrics.
    public var counts: (rooms: Int, participants: Int) {
        rooms.withLock { rooms in (rooms.members.count, rooms.members.values.reduce(0) { $0 + $1.count }) }
    }

    /// Who is in `room` now.
    public func participants(in room: String) -> [String] {
        rooms.withLock { $0.nicknames(in: room) }
    }

    /// Disconnects everyone with `.unavailable`: the server is shutting down.
    public func shutdown() {
        let everyone = rooms.withLock { rooms in
            defer { rooms.members.removeAll() }
            return rooms.members.values.flatMap(\.values).map(\.participant)
        }
        for participant in everyone {
            participant.mailbox.end(.failed(RPCError(code: .unavailable, message: "the server is shutting down; join again")))
        }
    }

    // MARK: Inside the lock

    /// Queues `event` for the room; participants whose queue overflows are removed (the room
    /// hears they left).
    private static func broadcast(_ event: ChatEvent, to room: String, except key: UInt64?, in rooms: inout Rooms) {
        var overflowed: [UInt64] = []
        for (other, member) in rooms.members[room] ?? [:] where other != key {
            if !member.participant.mailbox.offer(event) { overflowed.append(other) }
        }
        for other in overflowed { remove(other, from: room, in: &rooms) }
    }

    private static func remove(_ key: UInt64, from room: String, in rooms: inout Rooms) {
        guard let member = rooms.members[room]?.removeValue(forKey: key) else { return }
        if rooms.members[room]?.isEmpty == true { rooms.members[room] = nil }
        if let nickname = member.nickname { broadcast(presence(nickname, .left), to: room, except: nil, in: &rooms) }
    }

    private static func recent(_ room: String, count: Int, in database: SQLiteDatabase) throws -> [ChatMessage] {
        let statement = try database.prepare("""
            SELECT id, nickname, text, sent_at, sender_id FROM chat_messages WHERE room = ? ORDER BY id DESC LIMIT ?
            """)
        try statement.bind(.text(room), .int(count))
        var messages: [ChatMessage] = []
        while try statement.step() {
            let sentAt = statement.int64(at: 3)
            messages.append(.with {
                $0.id = statement.int64(at: 0)
                $0.nickname = statement.text(at: 1)
                $0.text = statement.text(at: 2)
                $0.sentAt = Google_Protobuf_Timestamp(seconds: sentAt / 1_000_000_000, nanos: Int32(sentAt % 1_000_000_000))
                $0.senderID = statement.text(at: 4)
            })
        }
        return messages.reversed()
    }

    private static func presence(_ nickname: String, _ change: Chat_V1_Presence.Change) -> ChatEvent {
        .with { $0.presence = .with { $0.nickname = nickname; $0.change = change; $0.at = now() } }
    }

    private static func now() -> Google_Protobuf_Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Google_Protobuf_Timestamp(seconds: Int64(time.tv_sec), nanos: Int32(time.tv_nsec))
    }
}
