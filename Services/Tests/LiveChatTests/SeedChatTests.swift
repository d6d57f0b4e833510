import Foundation
import TestSupport
import Testing

@testable import LiveChat

/// The seed's WebSocket chat on `orders-server`, judged by Python `websockets` and grpcio
/// (Tests/Peers/websocket_peer.py): the JSON protocol end to end, one order shared with gRPC
/// clients, pings, bad JSON, and the close code for every broken frame.
@Suite("The seed's WebSocket chat", .timeLimit(.minutes(4)))
struct SeedChatTests {
    @Test("rooms by path: / is the default room, /rooms/{room} any other, nothing else")
    func rooms() {
        #expect(SeedChatEndpoint.room(at: "/") == SeedChatEndpoint.defaultRoom)
        #expect(SeedChatEndpoint.room(at: "/?v=2") == SeedChatEndpoint.defaultRoom)
        #expect(SeedChatEndpoint.room(at: "/rooms/karts") == "karts")
        #expect(SeedChatEndpoint.room(at: "/rooms/") == nil)
        #expect(SeedChatEndpoint.room(at: "/rooms/a/b") == nil)
        #expect(SeedChatEndpoint.room(at: "/chat") == nil)
    }

    @Test("events become the seed's JSON: messages carry the sender's id, presence comes from \"server\"")
    func frames() {
        let fromWebSocket = ChatEvent.with {
            $0.message = .with {
                $0.nickname = "ann"
                $0.text = "hi"
                $0.senderID = "A1"
            }
        }
        #expect(SeedChatEndpoint.frame(for: fromWebSocket) == #"{"id":"A1","nickname":"ann","text":"hi"}"#)
        let fromGRPC = ChatEvent.with {
            $0.message = .with {
                $0.nickname = "ada"
                $0.text = "yo"
            }
        }
        #expect(SeedChatEndpoint.frame(for: fromGRPC) == #"{"id":"ada","nickname":"ada","text":"yo"}"#)
        let left = ChatEvent.with {
            $0.presence = .with {
                $0.nickname = "ada"
                $0.change = .left
            }
        }
        #expect(SeedChatEndpoint.frame(for: left) == #"{"id":"server","nickname":"server","text":"ada left"}"#)
        #expect(SeedChatEndpoint.frame(for: .with { $0.joined = .with { $0.room = "r" } }) == nil)
    }

    @Test("a WebSocket client's coming and going are the seed server's notices, with the room's count")
    func seedPresence() {
        func presence(_ change: Chat_V1_Presence.Change, _ participants: UInt32) -> ChatEvent {
            .with {
                $0.presence = .with {
                    $0.change = change
                    $0.participants = participants
                }
            }
        }
        #expect(
            SeedChatEndpoint.frame(for: presence(.joined, 3)) == #"{"id":"server","nickname":"server","text":"새로운 유저가 접속했습니다. 현재 유저 3 명"}"#)
        #expect(SeedChatEndpoint.frame(for: presence(.left, 2)) == #"{"id":"server","nickname":"server","text":"유저 한명이 떠났습니다. 현재 유저 2 명"}"#)
    }

    @Test("Python websockets and grpcio against orders-server: every check of websocket_peer.py")
    func peers() async throws {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let server = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent().appending(path: "orders-server").path
        let binaries =
            FileManager.default.isExecutableFile(atPath: server)
            ? URL(filePath: server).deletingLastPathComponent().path : root.appending(path: ".build/debug").path
        let (status, output) = try await runProcess(
            root.appending(path: ".venv/bin/python").path,
            [root.appending(path: "Tests/Peers/websocket_peer.py").path, "--bin", binaries],
            limit: .seconds(180)
        )
        #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
    }
}
