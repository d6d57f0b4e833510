import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

struct Greeter: Greeter_Greeter.SimpleServiceProtocol {
    func sayHello(request: Greeter_HelloRequest, context: ServerContext) async throws -> Greeter_HelloReply {
        .with { $0.message = "Hello, \(request.name)!" }
    }

    func chat(
        request: RPCAsyncSequence<Greeter_HelloRequest, any Error>, response: RPCWriter<Greeter_HelloReply>,
        context: ServerContext
    ) async throws {
        for try await hello in request {
            try await response.write(.with { $0.message = "Hello, \(hello.name)!" })
        }
    }
}

struct UnexpectedReply: Error, CustomStringConvertible {
    let description: String
}

/// What a screen shows: main-actor state, set inside `withGRPCClient` as a SwiftUI model
/// would set it (the closure runs on the main actor).
@MainActor
final class GreetingModel {
    private(set) var greetings: [String] = []
    private(set) var calls = 0

    /// Calls the greeter at `port`: a unary call, then a bidirectional one.
    func load(port: Int) async throws {
        try await withGRPCClient(transport: try .http2(target: .ipv4(host: "127.0.0.1", port: port), security: .plaintext)) { client in
            let greeter = Greeter_Greeter.Client(wrapping: client)
            greetings.append(try await greeter.sayHello(.with { $0.name = "Pitlane" }).message)
            calls += 1
            greetings += try await greeter.chat { writer in
                for name in ["Ada", "Grace"] { try await writer.write(.with { $0.name = name }) }
            } onResponse: { response in
                var messages: [String] = []
                for try await reply in response.messages { messages.append(reply.message) }
                return messages
            }
            calls += 1
        }
    }
}

/// Serves the greeter on a port the system picks, calls it both ways from the main actor,
/// and shuts down.
@main
struct GreeterApp {
    static func main() async throws {
        let server = GRPCServer(transport: .http2(address: .ipv4(host: "127.0.0.1", port: 0)), services: [Greeter()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let model = GreetingModel()
            try await model.load(port: try await server.listeningAddress.port ?? 0)
            let expected = ["Hello, Pitlane!", "Hello, Ada!", "Hello, Grace!"]
            guard model.greetings == expected, model.calls == 2 else {
                throw UnexpectedReply(description: "\(model.greetings) after \(model.calls) calls")
            }
            print("greeter: unary and bidirectional calls answered on the main actor")
        }
    }
}
