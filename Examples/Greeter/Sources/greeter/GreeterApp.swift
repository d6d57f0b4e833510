import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

struct Greeter: Greeter_Greeter.SimpleServiceProtocol {
    func sayHello(request: Greeter_HelloRequest, context: ServerContext) async throws -> Greeter_HelloReply {
        .with { $0.message = "Hello, \(request.name)!" }
    }

    func chat(request: RPCAsyncSequence<Greeter_HelloRequest, any Error>, response: RPCWriter<Greeter_HelloReply>,
              context: ServerContext) async throws {
        for try await hello in request {
            try await response.write(.with { $0.message = "Hello, \(hello.name)!" })
        }
    }
}

struct UnexpectedReply: Error, CustomStringConvertible {
    let description: String
}

/// Serves the greeter on a port the system picks, calls it both ways, and shuts down.
func greet() async throws {
    let server = GRPCServer(transport: .http2(address: .ipv4(host: "127.0.0.1", port: 0)), services: [Greeter()])
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.serve() }
        defer { server.beginGracefulShutdown() }
        let port = try await server.listeningAddress.port ?? 0
        try await withGRPCClient(transport: try .http2(target: .ipv4(host: "127.0.0.1", port: port), security: .plaintext)) { client in
            let greeter = Greeter_Greeter.Client(wrapping: client)
            let reply = try await greeter.sayHello(.with { $0.name = "Pitlane" })
            guard reply.message == "Hello, Pitlane!" else { throw UnexpectedReply(description: "unary: \(reply.message)") }
            let replies = try await greeter.chat { writer in
                for name in ["Ada", "Grace"] { try await writer.write(.with { $0.name = name }) }
            } onResponse: { response in
                var messages: [String] = []
                for try await reply in response.messages { messages.append(reply.message) }
                return messages
            }
            guard replies == ["Hello, Ada!", "Hello, Grace!"] else { throw UnexpectedReply(description: "bidirectional: \(replies)") }
        }
        print("greeter: unary and bidirectional calls answered")
    }
}

try await greet()
