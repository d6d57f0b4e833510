import PitlaneCore
import PitlaneProtobuf
import TestSupport
import Testing

@Suite("Status codes and metadata end to end", .timeLimit(.minutes(5)))
struct StatusAndMetadataTests {
    static let errorCodes: [RPCError.Code] = [
        .cancelled, .unknown, .invalidArgument, .deadlineExceeded, .notFound, .alreadyExists,
        .permissionDenied, .resourceExhausted, .failedPrecondition, .aborted, .outOfRange,
        .unimplemented, .internal, .unavailable, .dataLoss, .unauthenticated,
    ]

    @Test("every error code and its message reach the client, on every RPC kind", arguments: errorCodes)
    func errorCode(_ code: RPCError.Code) async throws {
        try await withEchoServer { echo, _ in
            let failing = EchoRequest.with {
                $0.failWithCode = Int32(code.status.rawValue)
                $0.failWithMessage = "failed with \(code) ünïcode %"
            }
            let unary = await #expect(throws: RPCError.self) { try await echo.get(failing) }
            let clientStreaming = await #expect(throws: RPCError.self) {
                try await echo.collect { try await $0.write(failing) }
            }
            let serverStreaming = await #expect(throws: RPCError.self) {
                try await echo.expand(failing) { response in for try await _ in response.messages {} }
            }
            let bidirectional = await #expect(throws: RPCError.self) {
                try await echo.update {
                    try await $0.write(failing)
                } onResponse: { response in
                    for try await _ in response.messages {}
                }
            }
            for error in [unary, clientStreaming, serverStreaming, bidirectional] {
                #expect(error?.code == code)
                #expect(error?.message == "failed with \(code) ünïcode %")
            }
        }
    }

    @Test("OK arrives as success with the response")
    func ok() async throws {
        try await withEchoServer { echo, _ in
            let response = try await echo.get(.with { $0.text = "fine" })
            #expect(response.text == "fine")
        }
    }

    @Test("a handler throwing something else yields .unknown without its details")
    func otherErrors() async throws {
        struct Secret: Error { let password = "hunter2" }
        struct Leaky: Pitlane_Test_Echo_Echo.SimpleServiceProtocol {
            func get(request: EchoRequest, context: ServerContext) async throws -> EchoResponse { throw Secret() }
            func collect(request: RPCAsyncSequence<EchoRequest, any Error>, context: ServerContext) async throws -> EchoResponse {
                throw Secret()
            }
            func expand(request: EchoRequest, response: RPCWriter<EchoResponse>, context: ServerContext) async throws { throw Secret() }
            func update(
                request: RPCAsyncSequence<EchoRequest, any Error>, response: RPCWriter<EchoResponse>, context: ServerContext
            ) async throws { throw Secret() }
        }
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [Leaky()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await withGRPCClient(transport: transport.client) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                let error = await #expect(throws: RPCError.self) { try await echo.get(EchoRequest()) }
                #expect(error?.code == .unknown)
                #expect(error?.message.contains("hunter2") == false)
                #expect(error?.message.contains("Secret") == false)
            }
        }
    }

    @Test("metadata round-trips: ASCII, binary and repeated keys, initial and trailing")
    func metadataRoundTrip() async throws {
        var sent: Metadata = ["x-race": "Duck Pond Dash"]
        sent.addString("one", forKey: "X-Repeated")
        sent.addString("two", forKey: "x-repeated")
        sent.addBinary([0, 1, 2, 255], forKey: "x-trace-bin")
        sent.addString("dropped", forKey: "grpc-status")
        sent.addString("dropped", forKey: "content-type")
        let expected = sent
        #expect(expected.count == 4)

        try await withEchoServer { echo, _ in
            let (initial, trailing) = try await echo.get(request: ClientRequest(message: .with { $0.text = "m" }, metadata: sent)) {
                response in
                (response.metadata, try response.accepted.get().trailingMetadata)
            }
            #expect(initial == expected)
            #expect(trailing == expected)
            #expect(initial[stringValues: "x-repeated"] == ["one", "two"])
            #expect(initial[binaryValues: "X-TRACE-BIN"] == [[0, 1, 2, 255]])

            let streamed = try await echo.expand(request: ClientRequest(message: .with { $0.repeat = 1 }, metadata: sent)) { response in
                var trailing: Metadata = [:]
                for try await part in try response.accepted.get().bodyParts {
                    if case .trailingMetadata(let metadata) = part { trailing = metadata }
                }
                return (response.metadata, trailing)
            }
            #expect(streamed.0 == expected)
            #expect(streamed.1 == expected)
        }
    }

    @Test("error metadata travels with the status")
    func errorMetadata() async throws {
        try await withEchoServer { echo, _ in
            let error = await #expect(throws: RPCError.self) {
                try await echo.get(request: ClientRequest(message: .with { $0.failWithCode = 5 }, metadata: ["x-why": "because"])) {
                    try $0.message
                }
            }
            #expect(error?.metadata[stringValues: "x-why"] == ["because"])
        }
    }
}
