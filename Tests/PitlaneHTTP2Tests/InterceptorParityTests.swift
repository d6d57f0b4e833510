import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// One path per RPC: a server with a pass-through interceptor behaves exactly as one with
/// none, although a unary method without interceptors takes a path of its own
/// (`RPCRouter.registerUnaryHandler`). Every RPC kind, errors, deadlines, the handler's
/// cancellation and metadata both ways, over HTTP/2 on real sockets: what the client sees and
/// what the handler saw are compared whole.
@Suite("Interceptor parity", .timeLimit(.minutes(2)))
struct InterceptorParityTests {
    typealias Echo = Pitlane_Test_Echo_Echo.Client<HTTP2ClientTransport>

    /// An interceptor that only calls the next.
    struct PassThrough: ServerInterceptor {
        func intercept<Input: Sendable, Output: Sendable>(
            request: StreamingServerRequest<Input>, context: ServerContext,
            next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
        ) async throws -> StreamingServerResponse<Output> {
            try await next(request, context)
        }
    }

    /// What a client observes of one RPC.
    struct Outcome: Equatable, Sendable, CustomStringConvertible {
        var metadata: [String] = []
        var messages: [String] = []
        var trailers: [String] = []
        var error: String?

        var description: String {
            "metadata \(metadata) messages \(messages) trailers \(trailers) error \(error ?? "none")"
        }

        static func fields(_ metadata: Metadata) -> [String] {
            metadata.headerFields.map { "\($0.name)=\($0.value)" }
        }

        mutating func failed(_ error: any Error) {
            guard let error = error as? RPCError else {
                self.error = "not an RPCError: \(error)"
                return
            }
            self.error = "\(error.code): \(error.message) \(Self.fields(error.metadata))"
        }
    }

    static let metadata: Metadata = ["x-trace": "7", "x-blob-bin": .binary([0, 1, 2])]
    /// The client's deadline, far on its real clock; the server's runs on the test's clock.
    static let deadline = CallOptions.defaults.with { $0.timeout = .seconds(60) }

    /// What a case has: the client, and the server's clock and handler events.
    struct Context: Sendable {
        let echo: Echo
        let clock: ManualClock
        let probe: Probe

        /// Runs `call`, whose handler waits to be cancelled, and passes the server's deadline
        /// once it waits: the server, not the client, ends the RPC, whatever the scheduling.
        func pastDeadline(_ call: @escaping @Sendable (Echo) async -> Outcome) async -> Outcome {
            let waited = probe.history.filter { $0 == "waiting" }.count
            async let outcome = call(echo)
            try? await eventually("the handler waits") { probe.history.filter { $0 == "waiting" }.count > waited }
            clock.advance(by: .seconds(61))
            return await outcome
        }
    }

    static func unary(_ echo: Echo, _ message: EchoRequest, options: CallOptions = .defaults) async -> Outcome {
        var outcome = Outcome()
        do {
            let response = try await echo.get(request: ClientRequest(message: message, metadata: metadata), options: options) { $0 }
            let contents = try response.accepted.get()
            outcome.metadata = Outcome.fields(contents.metadata)
            outcome.messages = ["\(contents.message.text)#\(contents.message.index)"]
            outcome.trailers = Outcome.fields(contents.trailingMetadata)
        } catch {
            outcome.failed(error)
        }
        return outcome
    }

    static func clientStreaming(_ echo: Echo, _ messages: [EchoRequest]) async -> Outcome {
        var outcome = Outcome()
        do {
            let request = StreamingClientRequest<EchoRequest>(metadata: metadata) { writer in
                for message in messages { try await writer.write(message) }
            }
            let contents = try await echo.collect(request: request) { try $0.accepted.get() }
            outcome.metadata = Outcome.fields(contents.metadata)
            outcome.messages = [contents.message.text]
            outcome.trailers = Outcome.fields(contents.trailingMetadata)
        } catch {
            outcome.failed(error)
        }
        return outcome
    }

    /// Server or bidirectional streaming: the response's parts, as they come.
    static func streamed(_ response: StreamingClientResponse<EchoResponse>) async -> Outcome {
        var outcome = Outcome()
        do {
            let contents = try response.accepted.get()
            outcome.metadata = Outcome.fields(contents.metadata)
            for try await part in contents.bodyParts {
                switch part {
                case .message(let message): outcome.messages.append("\(message.text)#\(message.index)")
                case .trailingMetadata(let trailers): outcome.trailers = Outcome.fields(trailers)
                }
            }
        } catch {
            outcome.failed(error)
        }
        return outcome
    }

    static func serverStreaming(_ echo: Echo, _ message: EchoRequest, options: CallOptions = .defaults) async -> Outcome {
        do {
            return try await echo.expand(request: ClientRequest(message: message, metadata: metadata), options: options) {
                await streamed($0)
            }
        } catch {
            var outcome = Outcome()
            outcome.failed(error)
            return outcome
        }
    }

    static func bidirectional(_ echo: Echo, _ messages: [EchoRequest]) async -> Outcome {
        do {
            let request = StreamingClientRequest<EchoRequest>(metadata: metadata) { writer in
                for message in messages { try await writer.write(message) }
            }
            return try await echo.update(request: request) { await streamed($0) }
        } catch {
            var outcome = Outcome()
            outcome.failed(error)
            return outcome
        }
    }

    /// The cases, each named.
    static let cases: [(String, @Sendable (Context) async -> Outcome)] = [
        ("unary", { await unary($0.echo, .with { $0.text = "hello" }) }),
        (
            "unary error",
            {
                await unary(
                    $0.echo,
                    .with {
                        $0.failWithCode = 5
                        $0.failWithMessage = "no such thing, café"
                    })
            }
        ),
        ("unary, no such status code", { await unary($0.echo, .with { $0.failWithCode = 99 }) }),
        (
            "unary past its deadline",
            { context in
                await context.pastDeadline { await unary($0, .with { $0.waitForCancellation = true }, options: deadline) }
            }
        ),
        ("client streaming", { await clientStreaming($0.echo, ["one", "two", "three"].map { word in .with { $0.text = word } }) }),
        ("client streaming, nothing sent", { await clientStreaming($0.echo, []) }),
        ("client streaming error", { await clientStreaming($0.echo, [.with { $0.text = "one" }, .with { $0.failWithCode = 9 }]) }),
        (
            "server streaming",
            {
                await serverStreaming(
                    $0.echo,
                    .with {
                        $0.text = "x"
                        $0.repeat = 3
                    })
            }
        ),
        (
            "server streaming error",
            {
                await serverStreaming(
                    $0.echo,
                    .with {
                        $0.failWithCode = 7
                        $0.failWithMessage = "denied"
                    })
            }
        ),
        (
            "server streaming past its deadline",
            { context in
                await context.pastDeadline { await serverStreaming($0, .with { $0.waitForCancellation = true }, options: deadline) }
            }
        ),
        ("bidirectional", { await bidirectional($0.echo, ["a", "b"].map { word in .with { $0.text = word } }) }),
        ("bidirectional, nothing sent", { await bidirectional($0.echo, []) }),
        (
            "bidirectional error",
            {
                await bidirectional(
                    $0.echo,
                    [
                        .with { $0.text = "a" },
                        .with {
                            $0.failWithCode = 3
                            $0.failWithMessage = "bad"
                        },
                    ])
            }
        ),
    ]

    /// Every case against a server with these interceptors: what the client saw of each, and
    /// what the handlers recorded, once the server has finished.
    static func run(interceptors: [any ServerInterceptor]) async throws -> (outcomes: [String: Outcome], handlers: [String]) {
        let probe = Probe()
        let clock = ManualClock()
        var config = HTTP2ServerTransport.Config.defaults
        config.timeSource = .manual(clock)
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), config: config),
            services: [EchoService(probe: probe)], interceptors: interceptors)
        var outcomes: [String: Outcome] = [:]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            let port = try #require(try await server.listeningAddress.port)
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let context = Context(echo: Echo(wrapping: client), clock: clock, probe: probe)
                for (name, call) in cases { outcomes[name] = await call(context) }
            }
            server.beginGracefulShutdown()
            try await group.waitForAll()
        }
        return (outcomes, probe.history)
    }

    @Test("every RPC kind, errors, deadlines, cancellation and metadata: the same with a pass-through interceptor as with none")
    func parity() async throws {
        let plain = try await Self.run(interceptors: [])
        let intercepted = try await Self.run(interceptors: [PassThrough()])
        for (name, _) in Self.cases {
            #expect(
                plain.outcomes[name] == intercepted.outcomes[name],
                "\(name): without \(plain.outcomes[name].map { "\($0)" } ?? "nothing"), with \(intercepted.outcomes[name].map { "\($0)" } ?? "nothing")"
            )
        }
        #expect(plain.handlers == intercepted.handlers)
        // The cases mean something: the unary call answered, its error kept its metadata, and
        // the handlers past their deadlines were cancelled by the server's deadline.
        #expect(plain.outcomes["unary"]?.messages == ["hello#0"])
        #expect(plain.outcomes["unary error"]?.error?.contains("no such thing, café") == true)
        #expect(
            plain.outcomes["unary past its deadline"]?.error?.hasPrefix(
                "DEADLINE_EXCEEDED: the deadline passed before the handler finished") == true)
        #expect(plain.handlers.filter { $0 == "cancelled" }.count == 2, "\(plain.handlers)")
    }
}
