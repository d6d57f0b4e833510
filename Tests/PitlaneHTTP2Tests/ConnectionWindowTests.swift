import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

@Suite("Connection flow-control window", .timeLimit(.minutes(5)))
struct ConnectionWindowTests {
    @Test("a stream whose reader stalls holds only its own window: other RPCs on the connection go on")
    func stalledStreamDoesNotStallTheConnection() async throws {
        let server = GRPCServer(transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                let release = RPCCancellationHandle()
                let (firstRead, reading) = AsyncStream.makeStream(of: Void.self)
                try await withThrowingTaskGroup(of: Void.self) { calls in
                    // 8 MB on one stream, read once and then not at all until released.
                    calls.addTask {
                        try await echo.expand(
                            .with {
                                $0.repeat = 800
                                $0.payloadBytes = 10_000
                            }
                        ) { response in
                            var iterator = response.messages.makeAsyncIterator()
                            _ = try await iterator.next()
                            reading.finish()
                            await release.wait()
                            while try await iterator.next() != nil {}
                        }
                    }
                    for await _ in firstRead {}
                    // The same connection carries these while the stream above holds its window.
                    for index in 0..<20 {
                        let reply = try await echo.get(
                            .with { $0.text = "\(index)" }, options: .defaults.with { $0.timeout = .seconds(10) })
                        #expect(reply.text == "\(index)")
                    }
                    release.cancel()
                    try await calls.waitForAll()
                }
            }
        }
    }
}
