// The code of the article "Services and the four RPC kinds" (Pitlane.docc/ServicesAndRPCs.md),
// compiled here; ArticleSampleTests checks that the article shows it as it is.
import Pitlane

typealias HelloRequest = Hello_HelloRequest
typealias HelloReply = Hello_HelloReply

struct GreeterService: Hello_Greeter.SimpleServiceProtocol {
    // Unary: one request, one reply.
    func sayHello(request: HelloRequest, context: ServerContext) async throws -> HelloReply {
        guard !request.name.isEmpty else { throw RPCError(code: .invalidArgument, message: "a name is required") }
        return .with { $0.message = "Hello, \(request.name)!" }
    }

    // Server streaming: one request, replies written as they are ready.
    func lotsOfReplies(request: HelloRequest, response: RPCWriter<HelloReply>, context: ServerContext) async throws {
        for greeting in ["Hello", "Bonjour", "Hallo"] {
            try await response.write(.with { $0.message = "\(greeting), \(request.name)!" })
        }
    }

    // Client streaming: requests read as they arrive, one reply at the end.
    func lotsOfGreetings(request: RPCAsyncSequence<HelloRequest, any Error>, context: ServerContext) async throws -> HelloReply {
        var names: [String] = []
        for try await hello in request { names.append(hello.name) }
        return .with { $0.message = "Hello, \(names.joined(separator: " and "))!" }
    }

    // Bidirectional streaming: a reply to each request, as it comes.
    func bidiHello(
        request: RPCAsyncSequence<HelloRequest, any Error>, response: RPCWriter<HelloReply>, context: ServerContext
    ) async throws {
        for try await hello in request {
            try await response.write(.with { $0.message = "Hello, \(hello.name)!" })
        }
    }
}

func serveGreeter() async throws {
    let server = GRPCServer(transport: .http2(address: .ipv4(host: "0.0.0.0", port: 8080)), services: [GreeterService()])
    try await server.serve()
}

func callEveryKind(port: Int) async throws -> [String] {
    var messages: [String] = []
    try await withGRPCClient(transport: try .http2(target: .ipv4(host: "127.0.0.1", port: port))) { client in
        let greeter = Hello_Greeter.Client(wrapping: client)

        // Unary
        let reply = try await greeter.sayHello(.with { $0.name = "Ada" })
        messages.append(reply.message)

        // Server streaming: the handler reads the replies while the call is open.
        try await greeter.lotsOfReplies(.with { $0.name = "Grace" }) { response in
            for try await reply in response.messages { messages.append(reply.message) }
        }

        // Client streaming: the request producer writes, the reply comes once it returns.
        let summary = try await greeter.lotsOfGreetings { writer in
            for name in ["Ada", "Grace", "Alan"] { try await writer.write(.with { $0.name = name }) }
        }
        messages.append(summary.message)

        // Bidirectional: the request producer and the response handler run side by side.
        try await greeter.bidiHello { writer in
            for name in ["Edsger", "Barbara"] { try await writer.write(.with { $0.name = name }) }
        } onResponse: { response in
            for try await reply in response.messages { messages.append(reply.message) }
        }
    }
    return messages
}

func metadataAndOptions(greeter: Hello_Greeter.Client<HTTP2ClientTransport>) async throws {
    let reply = try await greeter.sayHello(
        .with { $0.name = "Ada" },
        metadata: ["x-request-id": "42"],
        options: .defaults.with {
            $0.timeout = .seconds(2)
            $0.compression = .gzip
        }
    )
    print(reply.message)
}

func handleErrors(greeter: Hello_Greeter.Client<HTTP2ClientTransport>) async {
    do {
        _ = try await greeter.sayHello(HelloRequest())
    } catch let error as RPCError where error.code == .invalidArgument {
        print("the server said: \(error.message)")
    } catch {
        print("the call failed: \(error)")
    }
}

func sendOnceToMany(writers: [RPCWriter<HelloReply>]) async throws {
    let tick = SerializedMessage(HelloReply.with { $0.message = "tick" })  // encoded once, here
    for writer in writers {
        try await writer.write(serialized: tick)
    }
}

func followTicks(_ ticks: BoundedMailbox<SerializedMessage<HelloReply>>, response: RPCWriter<HelloReply>) async throws {
    try await response.deliver(from: ticks) { end in
        print("the follower is gone: \(end)")  // unsubscribe here
    }
}

func protobufValues() throws {
    let request = HelloRequest.with { $0.name = "Ada" }
    let bytes = try request.serializedBytes()  // the binary wire format
    let same = try HelloRequest(serializedBytes: bytes)
    let json = try request.jsonString()  // proto3's JSON mapping: {"name":"Ada"}
    let text = request.textFormatString()  // protobuf's text format: name: "Ada"
    assert(same == request && !json.isEmpty && !text.isEmpty)
}
