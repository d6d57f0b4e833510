// The code of the article "Testing with the in-process transport" (Pitlane.docc/Testing.md):
// the article's tests, run here as they are shown.
import Pitlane
import Testing

/// Serves `services` in memory while `body` calls them.
func withInProcessServer<Result: Sendable>(
    _ services: [any RegistrableRPCService], timeSource: TimeSource = .continuous,
    body: (GRPCClient<InProcessTransport.Client>) async throws -> Result
) async throws -> Result {
    let transport = InProcessTransport(timeSource: timeSource)
    let server = GRPCServer(transport: transport.server, services: services)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.serve() }
        defer { server.beginGracefulShutdown() }
        return try await withGRPCClient(transport: transport.client) { client in try await body(client) }
    }
}

/// Answers nothing until its RPC is cancelled.
struct SilentGreeter: Hello_Greeter.SimpleServiceProtocol {
    func sayHello(request: HelloRequest, context: ServerContext) async throws -> HelloReply {
        await context.cancellation.wait()
        throw CancellationError()
    }

    func lotsOfReplies(request: HelloRequest, response: RPCWriter<HelloReply>, context: ServerContext) async throws {}

    func lotsOfGreetings(request: RPCAsyncSequence<HelloRequest, any Error>, context: ServerContext) async throws -> HelloReply {
        HelloReply()
    }

    func bidiHello(
        request: RPCAsyncSequence<HelloRequest, any Error>, response: RPCWriter<HelloReply>, context: ServerContext
    ) async throws {}
}

@Suite("The greeter, in memory", .timeLimit(.minutes(1)))
struct GreeterTests {
    @Test("says hello, and refuses an empty name")
    func sayHello() async throws {
        try await withInProcessServer([GreeterService()]) { client in
            let greeter = Hello_Greeter.Client(wrapping: client)
            let reply = try await greeter.sayHello(.with { $0.name = "Ada" })
            #expect(reply.message == "Hello, Ada!")
            await #expect(throws: RPCError.self) { try await greeter.sayHello(HelloRequest()) }
        }
    }

    @Test("a reply to every request of a bidirectional stream")
    func bidiHello() async throws {
        let replies = try await withInProcessServer([GreeterService()]) { client in
            try await Hello_Greeter.Client(wrapping: client).bidiHello { writer in
                for name in ["Ada", "Grace"] { try await writer.write(.with { $0.name = name }) }
            } onResponse: { response in
                var replies: [String] = []
                for try await reply in response.messages { replies.append(reply.message) }
                return replies
            }
        }
        #expect(replies == ["Hello, Ada!", "Hello, Grace!"])
    }

    @Test("a deadline ends the call when the clock passes it, with no waiting")
    func deadline() async throws {
        let clock = ManualClock()
        try await withInProcessServer([SilentGreeter()], timeSource: .manual(clock)) { client in
            let greeter = Hello_Greeter.Client(wrapping: client)
            let call = Task { try await greeter.sayHello(.with { $0.name = "Ada" }, options: .defaults.with { $0.timeout = .seconds(30) }) }
            await clock.waitForArmedTimers(atLeast: 1)  // the call's deadline is armed
            clock.advance(by: .seconds(31))
            let error = await #expect(throws: RPCError.self) { try await call.value }
            #expect(error?.code == .deadlineExceeded)
        }
    }
}

@Suite("Every RPC kind, as the article calls them", .timeLimit(.minutes(1)))
struct RPCKindsSampleTests {
    @Test("over HTTP/2 on 127.0.0.1")
    func everyKind() async throws {
        let server = GRPCServer(transport: .http2(address: .ipv4(host: "127.0.0.1", port: 0)), services: [GreeterService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let messages = try await callEveryKind(port: try await server.listeningAddress.port ?? 0)
            #expect(
                messages == [
                    "Hello, Ada!", "Hello, Grace!", "Bonjour, Grace!", "Hallo, Grace!", "Hello, Ada and Grace and Alan!",
                    "Hello, Edsger!", "Hello, Barbara!",
                ])
        }
    }
}
