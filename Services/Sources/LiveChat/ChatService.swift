import Orders
import PitlaneCore

/// The chat room service (`chat.v1.ChatRoom`) on `ChatRooms`: the first request joins, later
/// ones send; the room's events go out as they are queued. The client's half-close (or a lost
/// connection) leaves the room; so does falling too far behind (`.resourceExhausted`).
public struct ChatService: Chat_V1_ChatRoom.SimpleServiceProtocol {
    private let rooms: ChatRooms

    public init(rooms: ChatRooms) {
        self.rooms = rooms
    }

    public func chat(
        request: RPCAsyncSequence<Chat_V1_ChatRequest, any Error>, response: RPCWriter<ChatEvent>,
        context: ServerContext
    ) async throws {
        let mailbox = rooms.makeMailbox()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var participant: ChatRooms.Participant?
                defer { if let participant { rooms.leave(participant) } }
                for try await next in request {
                    switch (next.action, participant) {
                    case (.join(let join), nil):
                        participant = try rooms.join(room: join.room, nickname: join.nickname, mailbox: mailbox)
                    case (.send(let send), let sender?):
                        try await rooms.send(send.text, from: sender)
                    case (.join, let member?):
                        throw RPCError(code: .failedPrecondition, message: "already in \(member.room)")
                    case (.send, nil), (nil, nil):
                        throw RPCError(code: .failedPrecondition, message: "the first request must join a room")
                    case (nil, _?):
                        break
                    }
                }
            }
            group.addTask {
                while let event = try await mailbox.next() { try await response.write(event) }
            }
            // Whichever ends first ends the RPC: the half-close, a failure, or the mailbox.
            let first = await group.nextResult()
            group.cancelAll()
            if case .failure(let error) = first { throw error }
        }
    }
}
