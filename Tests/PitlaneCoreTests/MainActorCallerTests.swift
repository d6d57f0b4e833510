import PitlaneCore
import TestSupport
import Testing

/// A view model as SwiftUI code writes one: main-actor state, set inside the scoped client,
/// the calls' response handlers and the transport's stream scope, with no hop or `Sendable`
/// closure in between.
@MainActor
private final class EchoModel {
    var replies: [String] = []
    var streamsOpened = 0

    func load(from transport: InProcessTransport) async throws {
        let server = GRPCServer(transport: transport.server, services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await withGRPCClient(transport: transport.client) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                replies.append(try await echo.get(.with { $0.text = "unary" }).text)
                // Response handlers run on the main actor too: they append as messages come.
                try await echo.update { writer in
                    for word in ["bi", "directional"] { try await writer.write(.with { $0.text = word }) }
                } onResponse: { response in
                    MainActor.assertIsolated()
                    for try await message in response.messages { replies.append(message.text) }
                }
                try await echo.expand(
                    .with {
                        $0.text = "stream"
                        $0.repeat = 2
                    }
                ) { response in
                    for try await message in response.messages { replies.append(message.text) }
                }
                try await echo.get(request: ClientRequest(message: .with { $0.text = "handled" })) { response in
                    replies.append(try response.message.text)
                }
            }
        }
    }

    func openStream(on transport: InProcessTransport.Client) async throws {
        let descriptor = MethodDescriptor(fullyQualifiedService: "pitlane.test.echo.Echo", method: "Get")
        try await transport.withStream(descriptor: descriptor, options: .defaults) { _ in streamsOpened += 1 }
    }
}

@Suite("Main-actor callers", .timeLimit(.minutes(1)))
struct MainActorCallerTests {
    @Test("withGRPCClient and response handlers run on the caller's actor: a main-actor model sets its state inside them")
    @MainActor
    func scopedClient() async throws {
        let model = EchoModel()
        try await model.load(from: InProcessTransport())
        #expect(model.replies.first == "unary")
        #expect(model.replies.count == 6)
        #expect(model.replies.last == "handled")
    }

    @Test("a transport's stream scope runs on the caller's actor")
    @MainActor
    func streamScope() async throws {
        let model = EchoModel()
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            group.addTask { try await transport.client.connect() }
            defer {
                server.beginGracefulShutdown()
                transport.client.beginGracefulShutdown()
            }
            try await model.openStream(on: transport.client)
        }
        #expect(model.streamsOpened == 1)
    }
}
