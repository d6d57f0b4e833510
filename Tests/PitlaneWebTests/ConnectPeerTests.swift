import PitlaneCore
import PitlaneHTTP2
import PitlaneWeb
import TestSupport
import Testing

/// Pitlane's client against a server no one here wrote: the Connect runtime for Python
/// (connectrpc under hypercorn, HTTP/2), over Connect with both codecs, gRPC-Web and gRPC.
@Suite("Pitlane client against the Connect runtime for Python", .timeLimit(.minutes(2)))
struct ConnectPeerTests {
    static let peer = Peers.script("connect_server_peer.py")

    static let protocols: [(ClientWireProtocol, MessageCodec)] = [
        (.connect, .protobuf), (.connect, .json), (.grpcWeb, .protobuf), (.grpc, .protobuf),
    ]

    @Test("unary, server streaming and errors", arguments: protocols)
    func calls(_ wire: ClientWireProtocol, _ codec: MessageCodec) async throws {
        let server = try await ServerProcess.start(Peers.python, [Self.peer, "--protos", Peers.protos])
        // Stopped here, awaited, whatever happens: a stop left to a task may never run before
        // the test process exits, and the peer would outlive it.
        do {
            try await Self.call(server, wire, codec)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private static func call(_ server: ServerProcess, _ wire: ClientWireProtocol, _ codec: MessageCodec) async throws {
        var config = HTTP2ClientTransport.Config.defaults
        config.wireProtocol = wire
        config.codec = codec
        let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: server.port), config: config)
        try await withGRPCClient(transport: transport) { client in
            let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
            let response = try await echo.get(request: ClientRequest(message: .with { $0.text = "hello" }, metadata: ["x-trace": "7"])) {
                $0
            }
            #expect(try response.message.text == "hello")
            #expect(response.metadata[stringValues: "x-trace"] == ["7"])
            let indices = try await echo.expand(
                .with {
                    $0.text = "x"
                    $0.repeat = 20
                    $0.payloadBytes = 1_000
                }
            ) { response in
                var indices: [Int32] = []
                for try await message in response.messages { indices.append(message.index) }
                return indices
            }
            #expect(indices == Array(0..<20))
            await #expect {
                _ = try await echo.get(
                    .with {
                        $0.failWithCode = 5
                        $0.failWithMessage = "not here"
                    })
            } throws: { ($0 as? RPCError)?.code == .notFound && ($0 as? RPCError)?.message == "not here" }
            await #expect {
                try await echo.expand(
                    .with {
                        $0.failWithCode = 9
                        $0.failWithMessage = "precondition"
                    }
                ) { response in
                    for try await _ in response.messages {}
                }
            } throws: { ($0 as? RPCError)?.code == .failedPrecondition }
        }
    }
}
