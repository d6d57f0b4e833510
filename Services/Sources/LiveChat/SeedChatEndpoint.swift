import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf
import PitlaneWeb

/// The seed's WebSocket chat (a Node.js `ws` server) on a Pitlane server, bridged to
/// ``ChatRooms``: its clients, unchanged, share rooms with gRPC `Chat` clients.
///
/// - `ws://host/` is the default room, `ws://host/rooms/{room}` any other.
/// - A client sends text frames `{"id": …, "nickname": …, "text": …}`; everyone in the room,
///   the sender included, gets each message as the same JSON, in the room's one order, stored
///   with the gRPC clients' messages. A gRPC client's messages carry its nickname as `id`.
/// - Joins and leaves come as messages from `"id": "server"`, to everyone in the room: a
///   WebSocket client's as the seed's server words them, with the room's count, the moment it
///   connects (the newcomer hears it too) and when it closes; a gRPC participant's by nickname.
/// - A message that is not such JSON (malformed, a field missing or of the wrong type, a
///   binary frame) gets a `"server"` notice naming the problem, to its sender only; invalid
///   UTF-8 closes the connection with 1007.
/// - A client that falls `ChatRooms.Settings.backlog` events behind is closed with 1008.
public enum SeedChatEndpoint {
    /// The room `/` names.
    public static let defaultRoom = "lobby"

    public static func endpoint(rooms: ChatRooms, limits: WebSocketLimits = WebSocketLimits()) -> WebSocketEndpoint {
        WebSocketEndpoint(limits: limits) { path in
            guard let room = room(at: path) else { return nil }
            // In the room before the 101 goes out: what anyone says once the client has its
            // answer reaches it.
            let mailbox = rooms.makeMailbox()
            let participant = rooms.listen(room: room, mailbox: mailbox)
            return { socket in await serve(socket, as: participant, rooms: rooms) }
        }
    }

    /// The room a path names: `/` (with any query) the default room, `/rooms/{room}` that room.
    static func room(at path: String) -> String? {
        let path = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        if path == "/" { return defaultRoom }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty, parts[1] == "rooms", !parts[2].isEmpty, parts[2].utf8.count <= 64 else { return nil }
        return String(parts[2])
    }

    /// One task per connection, reading what the client says; the room's events go to the
    /// socket from the mailbox as they come, with no task waiting for them. A client behind
    /// by the socket's queue holds them in the mailbox, whose backlog bounds it.
    static func serve(_ socket: WebSocket, as participant: ChatRooms.Participant, rooms: ChatRooms) async {
        let mailbox = participant.mailbox
        defer {
            rooms.leave(participant)
            // What the socket was not ready for goes with it.
            mailbox.stopDelivery(WebSocketClosed(reason: "the connection closed"))
        }
        mailbox.deliver(
            to: { event in
                guard let text = frame(for: event) else { return true }
                guard socket.trySend(.text(text)) else {
                    socket.whenReady { mailbox.resumeDelivery() }
                    return false
                }
                return true
            },
            ended: { end in
                // The room's end ends the connection; the client's close ends the reading below.
                guard case .failed(let error as RPCError) = end else { return }
                switch error.code {
                case .resourceExhausted: socket.close(.policyViolation, reason: "too slow: you fell behind the room")
                default: socket.close(.goingAway, reason: "the server is shutting down")
                }
            })
        do {
            for try await message in socket.messages {
                if let problem = await receive(message, from: participant, rooms: rooms) {
                    try await socket.send(text: notice("your message was not sent: \(problem)"))
                }
            }
        } catch {
            // The connection was lost, or is closing: the client is gone.
        }
    }

    /// Sends a client's message to the room; what is wrong with it, if anything.
    private static func receive(_ message: WebSocketMessage, from participant: ChatRooms.Participant, rooms: ChatRooms) async -> String? {
        guard case .text(let text) = message else { return "send JSON text frames, not binary ones" }
        let said: Chat_Seed_SeedChatMessage
        do {
            said = try Chat_Seed_SeedChatMessage(jsonString: text, options: lenient)
        } catch let error as ProtobufJSONError {
            return "it is not {\"id\", \"nickname\", \"text\"} JSON: \(error.reason) at byte \(error.offset)"
        } catch {
            return "\(error)"
        }
        for (name, present) in [("id", said.hasId), ("nickname", said.hasNickname), ("text", said.hasText)] where !present {
            return "it has no \"\(name)\""
        }
        do {
            try await rooms.send(said.text, from: participant, nickname: said.nickname, senderID: said.id)
            return nil
        } catch let error as RPCError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    /// Fields other clients may add are ignored, as the seed's server ignored them.
    private static let lenient: JSONDecodingOptions = {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        return options
    }()

    /// An event as the seed's clients expect it; nil for events they have no form for.
    static func frame(for event: ChatEvent) -> String? {
        switch event.event {
        case .message(let message):
            return json(
                id: message.senderID.isEmpty ? message.nickname : message.senderID,
                nickname: message.nickname, text: message.text)
        case .presence(let presence) where presence.nickname.isEmpty:
            // A client of this protocol, in the seed server's words: "a new user connected, N
            // users now" and "a user left, N users now".
            let count = presence.participants
            return notice(presence.change == .joined ? "새로운 유저가 접속했습니다. 현재 유저 \(count) 명" : "유저 한명이 떠났습니다. 현재 유저 \(count) 명")
        case .presence(let presence):
            return notice("\(presence.nickname) \(presence.change == .joined ? "joined" : "left")")
        case .joined, nil:
            return nil
        }
    }

    static func notice(_ text: String) -> String {
        json(id: "server", nickname: "server", text: text)
    }

    private static func json(id: String, nickname: String, text: String) -> String {
        let message = Chat_Seed_SeedChatMessage.with {
            $0.id = id
            $0.nickname = nickname
            $0.text = text
        }
        // Three set strings always encode.
        return (try? message.jsonString()) ?? "{}"
    }
}
