import PitlaneCore
import PitlaneHTTP2
import PitlaneWeb
import TestSupport
import Testing

/// A Pitlane client speaking gRPC-Web and Connect (proto and JSON) to a Pitlane server on
/// one port: every RPC kind the protocol carries over HTTP/2, metadata both ways, errors,
/// deadlines and compression behave as over gRPC.
@Suite("Client and server over gRPC-Web and Connect", .timeLimit(.minutes(2)))
struct WireProtocolTests {
    static let protocols: [(ClientWireProtocol, MessageCodec)] = [
        (.grpc, .protobuf), (.grpcWeb, .protobuf), (.connect, .protobuf), (.connect, .json),
    ]

    func withEcho(
        _ wire: ClientWireProtocol, _ codec: MessageCodec, maxMessageBytes: Int? = nil,
        _ body: @Sendable (Pitlane_Test_Echo_Echo.Client<HTTP2ClientTransport>) async throws -> Void
    ) async throws {
        var serverConfig = HTTP2ServerTransport.Config.defaults
        serverConfig.web = WebConfig()
        if let maxMessageBytes { serverConfig.rpc.maxMessageBytes = maxMessageBytes }
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), config: serverConfig),
            services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            var config = HTTP2ClientTransport.Config.defaults
            config.wireProtocol = wire
            config.codec = codec
            let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port), config: config)
            try await withGRPCClient(transport: transport) { client in
                try await body(Pitlane_Test_Echo_Echo.Client(wrapping: client))
            }
        }
    }

    @Test("unary: the message, and metadata back as headers and trailers", arguments: protocols)
    func unary(_ wire: ClientWireProtocol, _ codec: MessageCodec) async throws {
        try await withEcho(wire, codec) { echo in
            let response = try await echo.get(request: ClientRequest(message: .with { $0.text = "hello" }, metadata: ["x-trace": "7"])) {
                $0
            }
            #expect(try response.message.text == "hello")
            #expect(response.metadata[stringValues: "x-trace"] == ["7"])
            #expect(try response.accepted.get().trailingMetadata[stringValues: "x-trace"] == ["7"])
        }
    }

    @Test("server streaming: every message in order, compressed with gzip", arguments: protocols)
    func serverStreaming(_ wire: ClientWireProtocol, _ codec: MessageCodec) async throws {
        try await withEcho(wire, codec) { echo in
            let options = CallOptions.defaults.with { $0.compression = .gzip }
            let indices = try await echo.expand(
                .with {
                    $0.text = "x"
                    $0.repeat = 50
                    $0.payloadBytes = 3_000
                }, options: options
            ) { response in
                var indices: [Int32] = []
                for try await message in response.messages { indices.append(message.index) }
                return indices
            }
            #expect(indices == Array(0..<50))
        }
    }

    @Test("errors keep their code and message", arguments: protocols)
    func errors(_ wire: ClientWireProtocol, _ codec: MessageCodec) async throws {
        try await withEcho(wire, codec) { echo in
            await #expect {
                _ = try await echo.get(
                    .with {
                        $0.failWithCode = 5
                        $0.failWithMessage = "no such thing, café"
                    })
            } throws: { error in
                (error as? RPCError)?.code == .notFound && (error as? RPCError)?.message == "no such thing, café"
            }
            await #expect {
                try await echo.expand(
                    .with {
                        $0.failWithCode = 7
                        $0.failWithMessage = "denied"
                    }
                ) { response in
                    for try await _ in response.messages {}
                }
            } throws: { ($0 as? RPCError)?.code == .permissionDenied }
        }
    }

    @Test("a request over the server's message limit is RESOURCE_EXHAUSTED; the connection serves on", arguments: protocols)
    func messageLimit(_ wire: ClientWireProtocol, _ codec: MessageCodec) async throws {
        try await withEcho(wire, codec, maxMessageBytes: 1_000) { echo in
            await #expect {
                _ = try await echo.get(.with { $0.text = String(repeating: "x", count: 5_000) })
            } throws: { ($0 as? RPCError)?.code == .resourceExhausted }
            let small = try await echo.get(.with { $0.text = "small" })
            #expect(small.text == "small")
        }
    }

    @Test("a deadline the handler outlives ends the call with DEADLINE_EXCEEDED", arguments: protocols)
    func deadline(_ wire: ClientWireProtocol, _ codec: MessageCodec) async throws {
        try await withEcho(wire, codec) { echo in
            await #expect {
                _ = try await echo.get(.with { $0.waitForCancellation = true }, options: .defaults.with { $0.timeout = .milliseconds(200) })
            } throws: { ($0 as? RPCError)?.code == .deadlineExceeded }
        }
    }

    @Test("client and bidirectional streaming over Connect (HTTP/2)", arguments: [MessageCodec.protobuf, .json])
    func connectStreams(_ codec: MessageCodec) async throws {
        try await withEcho(.connect, codec) { echo in
            let collected = try await echo.collect { writer in
                for word in ["one", "two", "three"] { try await writer.write(.with { $0.text = word }) }
            }
            #expect(collected.text == "one two three")
            let echoed = try await echo.update { writer in
                for word in ["a", "b"] { try await writer.write(.with { $0.text = word }) }
            } onResponse: { response in
                var texts: [String] = []
                for try await message in response.messages { texts.append(message.text) }
                return texts
            }
            #expect(echoed == ["a", "b"])
        }
    }
}
