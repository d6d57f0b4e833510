import PitlaneCore
import PitlaneProtobuf
import Synchronization
import TestSupport
import Testing

@Suite("The interceptors Pitlane ships", .timeLimit(.minutes(5)))
struct ShippedInterceptorTests {
    static let authentication = BearerTokenAuthenticationInterceptor { token, _ in
        token == "valid-token" ? "alice" : nil
    }

    @Test("bearer tokens: missing → .unauthenticated, unknown → .unauthenticated, valid → the handler sees the identity")
    func bearerTokens() async throws {
        try await withEchoServer(serverInterceptors: [Self.authentication]) { echo, _ in
            let missing = await #expect(throws: RPCError.self) { try await echo.get(EchoRequest()) }
            #expect(missing?.code == .unauthenticated)

            let wrong = await #expect(throws: RPCError.self) {
                try await echo.get(EchoRequest(), metadata: ["authorization": "Bearer forged"])
            }
            #expect(wrong?.code == .unauthenticated)

            // A client cannot claim an identity itself: the interceptor replaces the header.
            var metadata: Metadata = ["authorization": "Bearer valid-token"]
            metadata.addString("mallory", forKey: BearerTokenAuthenticationInterceptor.identityKey)
            let echoed = try await echo.get(request: ClientRequest(message: EchoRequest(), metadata: metadata)) { $0.metadata }
            #expect(echoed[stringValues: BearerTokenAuthenticationInterceptor.identityKey] == ["alice"])
        }
    }

    @Test("the client interceptor adds the token to every call")
    func clientToken() async throws {
        try await withEchoServer(
            serverInterceptors: [Self.authentication],
            clientInterceptors: [BearerTokenClientInterceptor(token: "valid-token")]
        ) { echo, _ in
            let response = try await echo.get(.with { $0.text = "let me in" })
            #expect(response.text == "let me in")
        }
    }

    @Test("logging: one line per RPC with method, peer, status and duration")
    func logging() async throws {
        let lines = Mutex<[String]>([])
        let logger = LoggingServerInterceptor { line in lines.withLock { $0.append(line) } }
        let clientLines = Mutex<[String]>([])
        let clientLogger = LoggingClientInterceptor { line in clientLines.withLock { $0.append(line) } }
        try await withEchoServer(serverInterceptors: [logger], clientInterceptors: [clientLogger]) { echo, _ in
            _ = try await echo.get(.with { $0.text = "ok" })
            _ = try? await echo.get(.with { $0.failWithCode = 5 })
        }
        let logged = lines.withLock { $0 }
        #expect(logged.count == 2)
        #expect(logged.contains { $0.hasPrefix("rpc /pitlane.test.echo.Echo/Get from in-process: OK in ") })
        #expect(logged.contains { $0.hasPrefix("rpc /pitlane.test.echo.Echo/Get from in-process: NOT_FOUND in ") })
        let clientLogged = clientLines.withLock { $0 }
        #expect(clientLogged.count == 2)
        #expect(clientLogged.allSatisfy { $0.hasPrefix("call /pitlane.test.echo.Echo/Get: ") })
    }
}
