import PitlaneCore
import PitlaneProtobuf
import TestSupport
import Testing

@Suite("Every RPC kind over the in-process transport", .timeLimit(.minutes(5)))
struct RPCKindsTests {
    @Test("unary: one request, one response")
    func unary() async throws {
        try await withEchoServer { echo, _ in
            let response = try await echo.get(.with { $0.text = "hello" })
            #expect(response.text == "hello")
        }
    }

    @Test("client streaming: many requests, one response")
    func clientStreaming() async throws {
        try await withEchoServer { echo, _ in
            let response = try await echo.collect { writer in
                for word in ["duck", "pond", "dash"] { try await writer.write(.with { $0.text = word }) }
            }
            #expect(response.text == "duck pond dash")
        }
    }

    @Test("server streaming: one request, many responses in order")
    func serverStreaming() async throws {
        try await withEchoServer { echo, _ in
            let indices = try await echo.expand(
                .with {
                    $0.text = "lap"
                    $0.repeat = 50
                }
            ) { response in
                var indices: [Int32] = []
                for try await message in response.messages { indices.append(message.index) }
                return indices
            }
            #expect(indices == Array(0..<50))
        }
    }

    @Test("bidirectional streaming: each request answered while the stream is open")
    func bidirectional() async throws {
        try await withEchoServer { echo, _ in
            let texts = try await echo.update { writer in
                for index in 0..<20 { try await writer.write(.with { $0.text = "m\(index)" }) }
            } onResponse: { response in
                var texts: [String] = []
                for try await message in response.messages { texts.append(message.text) }
                return texts
            }
            #expect(texts == (0..<20).map { "m\($0)" })
        }
    }

    @Test("bidirectional ping-pong: the client waits for each answer before the next request")
    func pingPong() async throws {
        try await withEchoServer { echo, _ in
            let (requests, continuation) = AsyncStream.makeStream(of: String.self)
            let answers = try await echo.update { writer in
                for await text in requests { try await writer.write(.with { $0.text = text }) }
            } onResponse: { response in
                var answers: [String] = []
                continuation.yield("ping0")
                for try await message in response.messages {
                    answers.append(message.text)
                    if answers.count == 5 { continuation.finish() } else { continuation.yield("ping\(answers.count)") }
                }
                return answers
            }
            #expect(answers == (0..<5).map { "ping\($0)" })
        }
    }

    @Test("an unknown method fails with .unimplemented")
    func unknownMethod() async throws {
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await withGRPCClient(transport: transport.client) { client in
                let descriptor = MethodDescriptor(fullyQualifiedService: "pitlane.test.echo.Echo", method: "Missing")
                let error = await #expect(throws: RPCError.self) {
                    try await client.unary(
                        request: ClientRequest(message: EchoRequest()), descriptor: descriptor,
                        serializer: ProtobufSerializer<EchoRequest>(), deserializer: ProtobufDeserializer<EchoResponse>()
                    ) { try $0.message }
                }
                #expect(error?.code == .unimplemented)
                #expect(error?.message.contains("Missing") == true)
            }
        }
    }

    @Test("a request that does not decode fails with .internal saying why")
    func undecodableRequest() async throws {
        try await withEchoServer { _, _ in }
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await withGRPCClient(transport: transport.client) { client in
                let error = await #expect(throws: RPCError.self) {
                    try await client.unary(
                        request: ClientRequest(message: [0x0A, 0x05, 0x61]), descriptor: Pitlane_Test_Echo_Echo.Method.Get.descriptor,
                        serializer: RawBytes(), deserializer: ProtobufDeserializer<EchoResponse>()
                    ) { try $0.message }
                }
                #expect(error?.code == .internal)
                #expect(error?.message.contains("pitlane.test.echo.EchoRequest") == true)
            }
        }
    }
}

/// Sends bytes as they are, to put malformed messages on the wire.
struct RawBytes: MessageSerializer {
    func serialize(_ message: [UInt8]) throws -> [UInt8] { message }
}
