import Glibc
import Orders
import PitlaneCore
import PitlaneLive
import PitlaneProtobuf
import PitlaneSQL
import PitlaneSQLite
import Synchronization

public typealias ChatEvent = Chat_V1_ChatEvent
public typealias ChatMessage = Chat_V1_ChatMessage

/// The chat rooms: messages in a `FeedLog` (the feed `chat`, a key per room) in a database
/// (SQLite, or PostgreSQL shared by replicas), and everyone in a room on this server.
///
/// A message's number is assigned in its transaction (the feed numbers each room's messages
/// in the commit), so the numbers are the one order of the room across every replica. Each
/// server hands a room's messages to its participants strictly in that order: it remembers
/// how far it has delivered each room with someone in it, and before delivering a message
/// reads any earlier one it has not seen (committed by another replica) from the log. Other
/// replicas' commits wake it through the feed's relay (`relay()`).
///
/// One lock orders everything that happens in the rooms here: messages are queued for every
/// participant of their room under it, in log order, and so are joins (the history a joiner
/// gets is read there too, up to what the room has been given) and leaves — so every
/// participant sees one order per room, with nothing missed or repeated between the history
/// and the live messages. Each participant's queue is bounded; one that falls `backlog` events
/// behind is disconnected with `.resourceExhausted` and the room hears that it left. Presence
/// (joins and leaves) is per server: a room's participants on other replicas are not listed.
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
        var members: [String: [UInt64: Member]] = [:]
        /// The last message id handed to each room with members (missing while unknown: the
        /// database was unreachable when the room's first member came).
        var delivered: [String: Int64] = [:]
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

    /// Where commits are announced to other replicas.
    public static let channel = "pitlane_chat"

    /// How errors name a room.
    static let names = FeedNames(domain: "chat.pitlane.dev", keyField: "room", noun: "room", restart: "join again")

    public let settings: Settings
    /// The rooms' messages.
    public let feed: FeedLog
    public var database: any SQLDatabase { feed.database }
    private let rooms = Mutex(Rooms())

    /// Opens (creating) the message store in the SQLite file at `path`.
    public convenience init(path: String, settings: Settings = Settings()) throws {
        try self.init(database: SQLiteStore(path: path), settings: settings)
    }

    /// Opens (creating and migrating) the message store in `database`.
    public init(database: any SQLDatabase, settings: Settings = Settings()) throws {
        try database.withConnection { connection in
            try FeedLog.schema.apply(to: connection)
            try Self.schema.apply(to: connection, legacyVersion: Self.legacyVersion, seed: Self.moveMessagesToFeed)
        }
        feed = try FeedLog(name: "chat", database: database, names: Self.names, retention: .unlimited, channel: Self.channel)
        self.settings = settings
    }

    /// A mailbox bounded by `settings.backlog`, for `join`.
    public func makeMailbox() -> BoundedMailbox<ChatEvent> {
        Mailbox(limit: settings.backlog) { limit in
            RPCError(
                code: .resourceExhausted, message: "you fell more than \(limit) events behind the room and were disconnected; join again")
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
            // The room first gets what was committed until now; the joiner's history ends there.
            let through = try catchUp(room, in: &rooms)
            let history = try database.withConnection { connection in
                try feed.latest(settings.history, of: room, through: through, in: connection).map(Self.message)
            }
            let participant = Participant(room: room, nickname: nickname, mailbox: mailbox, key: rooms.makeKey())
            rooms.members[room, default: [:]][participant.key] = Member(participant: participant, nickname: nickname)
            let participants = rooms.nicknames(in: room)
            participant.mailbox.offer(
                .with {
                    $0.joined = .with {
                        $0.room = room
                        $0.participants = participants
                    }
                })
            for message in history { participant.mailbox.offer(.with { $0.message = message }) }
            let joined = Self.presence(nickname, .joined, in: room, rooms)
            Self.broadcast(joined, to: room, except: participant.key, in: &rooms)
            return participant
        }
    }

    /// Enters `room` without a nickname, as a client of the seed's WebSocket chat does: it
    /// receives what is said from now on. Everyone in the room, the newcomer included, hears
    /// at once that someone came (a presence without a nickname, with the room's count), as
    /// the seed's server tells every client of each connection; its leaving is told the same
    /// way. Its nickname, taken from its first message, names its messages, not its presence.
    public func listen(room: String, mailbox: BoundedMailbox<ChatEvent>) -> Participant {
        rooms.withLock { rooms in
            // Unreachable database: the room's position is learnt at its next message.
            _ = try? catchUp(room, in: &rooms)
            let participant = Participant(room: room, nickname: nil, mailbox: mailbox, key: rooms.makeKey())
            rooms.members[room, default: [:]][participant.key] = Member(participant: participant, nickname: nil)
            let came = Self.presence("", .joined, in: room, rooms)
            Self.broadcast(came, to: room, except: nil, in: &rooms)
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
    /// `nickname` (the message's, and the participant's from then on) and `senderID`, the id
    /// the client gave itself, which the message carries back to it.
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

    /// Stores the message (the feed's group commit shares commits between concurrent sends)
    /// and, once committed, queues it for the room in log order.
    private func send(_ request: SendRequest) async throws -> ChatMessage {
        guard !request.text.isEmpty else { throw RPCError(code: .invalidArgument, message: "a message needs text") }
        guard request.text.utf8.count <= 4_096 else { throw RPCError(code: .invalidArgument, message: "messages are at most 4096 bytes") }
        let room = request.participant.room
        let nickname = try rooms.withLock { rooms in
            guard var member = rooms.members[room]?[request.participant.key] else {
                throw RPCError(code: .failedPrecondition, message: "not in \(room)")
            }
            if let named = request.nickname, member.nickname != named {
                member.nickname = named
                rooms.members[room]?[request.participant.key] = member
            }
            return member.nickname ?? ""
        }
        let unstamped = ChatMessage.with {
            $0.nickname = nickname
            $0.text = request.text
            $0.senderID = request.senderID
        }
        let entry = try await feed.append(
            try unstamped.serializedBytes(), to: room,
            afterCommit: { [self] entry in
                let message = Self.stamped(unstamped, by: entry)
                rooms.withLock { rooms in deliverCommitted(message, to: room, in: &rooms) }
            })
        return Self.stamped(unstamped, by: entry)
    }

    /// Hands this server's newly committed `message` to the room: directly when it follows
    /// what the room was given, after reading what other replicas committed in between
    /// otherwise. What cannot be read now (the database went away) the room gets at its next
    /// catch-up.
    private func deliverCommitted(_ message: ChatMessage, to room: String, in rooms: inout Rooms) {
        guard rooms.members[room] != nil else { return }
        let through = rooms.delivered[room] ?? message.id - 1
        rooms.delivered[room] = through
        if message.id == through + 1 {
            deliver([message], to: room, in: &rooms)
        } else {
            _ = try? catchUp(room, in: &rooms)
        }
    }

    /// Hands `room` every committed message after what it was given, in order; returns the id
    /// it has been given through. A room not followed yet starts at its newest message: no one
    /// here was in it to be given the earlier ones.
    @discardableResult
    private func catchUp(_ room: String, in rooms: inout Rooms) throws -> Int64 {
        guard let through = rooms.delivered[room] else {
            let newest = try database.withConnection { try feed.state(of: room, in: $0)?.lastSequence ?? 0 }
            rooms.delivered[room] = newest
            return newest
        }
        // A bounded page: a room further behind gets the rest at its next catch-up.
        let missed = try database.withConnection { try feed.entries(of: room, after: through, limit: 1_024, in: $0).map(Self.message) }
        deliver(missed, to: room, in: &rooms)
        return rooms.delivered[room] ?? through
    }

    /// Queues each message the room was not given yet, and moves its position.
    private func deliver(_ messages: [ChatMessage], to room: String, in rooms: inout Rooms) {
        for message in messages where message.id > rooms.delivered[room] ?? 0 {
            rooms.delivered[room] = message.id
            Self.broadcast(.with { $0.message = message }, to: room, except: nil, in: &rooms)
        }
    }

    /// Hands this server's rooms what other replicas of the database commit, until the
    /// returned listening is stopped; `onChange` hears whether the database is reachable.
    /// Nil for a database only this process uses (SQLite).
    public func relay(onChange: @escaping @Sendable (_ reachable: Bool) -> Void = { _ in }) -> (any SQLListening)? {
        feed.relay(onChange: onChange) { [self] wake in
            rooms.withLock { rooms in
                let woken =
                    switch wake {
                    case .moved(let positions): Array(positions.keys)
                    case .anyMoved: Array(rooms.members.keys)
                    }
                for room in woken where rooms.members[room] != nil { _ = try? catchUp(room, in: &rooms) }
            }
        }
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
        if rooms.members[room]?.isEmpty == true {
            rooms.members[room] = nil
            rooms.delivered[room] = nil
        }
        // A listener leaves as it came, without a nickname.
        let left = presence(member.participant.nickname ?? "", .left, in: room, rooms)
        broadcast(left, to: room, except: nil, in: &rooms)
    }

    /// The message an entry of the feed holds.
    private static func message(_ entry: FeedLog.Entry) throws -> ChatMessage {
        stamped(try ChatMessage(serializedBytes: entry.payload), by: entry)
    }

    /// `message` as `entry` committed it: its id is the entry's sequence, its time the commit's.
    private static func stamped(_ message: ChatMessage, by entry: FeedLog.Entry) -> ChatMessage {
        var message = message
        message.id = entry.sequence
        message.sentAt = entry.timestamp
        return message
    }

    // MARK: Schema

    static let schema = SchemaMigrations(
        component: "chat",
        steps: [
            (
                sqlite: """
                CREATE TABLE chat_messages (
                    room TEXT NOT NULL, id INTEGER NOT NULL, nickname TEXT NOT NULL, text TEXT NOT NULL, sent_at INTEGER NOT NULL,
                    PRIMARY KEY (room, id)
                ) WITHOUT ROWID
                """,
                postgres: """
                CREATE TABLE chat_messages (
                    room TEXT NOT NULL, id BIGINT NOT NULL, nickname TEXT NOT NULL, text TEXT NOT NULL, sent_at BIGINT NOT NULL,
                    PRIMARY KEY (room, id)
                )
                """
            ),
            // With the seed's WebSocket chat: the id its clients give themselves.
            (
                sqlite: "ALTER TABLE chat_messages ADD COLUMN sender_id TEXT NOT NULL DEFAULT ''",
                postgres: "ALTER TABLE chat_messages ADD COLUMN sender_id TEXT NOT NULL DEFAULT ''"
            ),
            // With replicas: each room's counter, locked by the transaction that takes a number.
            (
                sqlite: """
                CREATE TABLE chat_rooms (room TEXT PRIMARY KEY, last_id INTEGER NOT NULL) WITHOUT ROWID;
                INSERT INTO chat_rooms (room, last_id) SELECT room, max(id) FROM chat_messages GROUP BY room;
                """,
                postgres: """
                CREATE TABLE chat_rooms (room TEXT PRIMARY KEY, last_id BIGINT NOT NULL);
                INSERT INTO chat_rooms (room, last_id) SELECT room, max(id) FROM chat_messages GROUP BY room;
                """
            ),
            // With PitlaneLive: each room's counter becomes its key in the feed `chat`
            // (FeedLog.schema, applied first); the messages follow (`moveMessagesToFeed`).
            (
                sqlite: ChatRooms.moveCounters,
                postgres: ChatRooms.moveCounters
            ),
        ])

    private static let moveCounters = """
        INSERT INTO feed_keys (feed, key, last_sequence) SELECT 'chat', room, last_id FROM chat_rooms;
        DROP TABLE chat_rooms;
        """

    /// Moves the messages of `chat_messages`, if the table is still there, into the feed as
    /// serialized `ChatMessage`s (their id and time are the entry's), and drops it: the seed of
    /// the schema's migrations, in their transaction.
    private static func moveMessagesToFeed(_ connection: any SQLConnection) throws {
        let exists =
            connection.dialect == .sqlite
            ? "SELECT 1 FROM sqlite_master WHERE name = 'chat_messages'"
            : "SELECT 1 WHERE to_regclass('chat_messages') IS NOT NULL"
        guard try connection.first(exists, as: { _ in true }) != nil else { return }
        let rows = try connection.all("SELECT room, id, nickname, text, sent_at, sender_id FROM chat_messages ORDER BY room, id") { row in
            let payload: [UInt8] = try ChatMessage.with {
                $0.nickname = row.text(at: 2)
                $0.text = row.text(at: 3)
                $0.senderID = row.text(at: 5)
            }.serializedBytes()
            return (room: row.text(at: 0), id: row.int64(at: 1), sentAt: row.int64(at: 4), payload: payload)
        }
        for row in rows {
            try connection.run(
                "INSERT INTO feed_entries (feed, key, sequence, occurred_at, payload) VALUES ('chat', ?, ?, ?, ?)",
                .text(row.room), .integer(row.id), .integer(row.sentAt), .blob(row.payload))
        }
        try connection.execute("DROP TABLE chat_messages")
    }

    /// SQLite files from before `pitlane_schema`: the table, with or without `sender_id`.
    private static func legacyVersion(_ connection: any SQLConnection) throws -> Int {
        guard connection.dialect == .sqlite,
            try connection.first("SELECT 1 FROM sqlite_master WHERE name = 'chat_messages'", as: { _ in true }) != nil
        else { return 0 }
        let hasSender =
            try connection.first(
                "SELECT count(*) FROM pragma_table_info('chat_messages') WHERE name = 'sender_id'",
                as: { $0.int64(at: 0) }) ?? 0
        return hasSender > 0 ? 2 : 1
    }

    /// A presence change in `room`, counting who is in it here once the change is made.
    private static func presence(
        _ nickname: String, _ change: Chat_V1_Presence.Change, in room: String, _ rooms: borrowing Rooms
    ) -> ChatEvent {
        let count = rooms.members[room]?.count ?? 0
        return .with {
            $0.presence = .with {
                $0.nickname = nickname
                $0.change = change
                $0.at = now()
                $0.participants = UInt32(count)
            }
        }
    }

    private static func now() -> Google_Protobuf_Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Google_Protobuf_Timestamp(seconds: Int64(time.tv_sec), nanos: Int32(time.tv_nsec))
    }
}
