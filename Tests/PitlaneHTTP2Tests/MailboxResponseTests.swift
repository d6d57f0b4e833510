import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf
import TestSupport
import Testing

/// A response handed to a mailbox (`RPCWriter.deliver(from:ended:)`) over real HTTP/2: the
/// handler returns at once, the mailbox's messages reach the client in order however far
/// behind it falls, and the mailbox's end — or the RPC's — ends the other.
@Suite("Responses delivered from a mailbox, with no task", .timeLimit(.minutes(2)))
struct MailboxResponseTests {
    typealias Feed = BoundedMailbox<SerializedMessage<EchoResponse>>

    struct Overflow: Error {}

    /// What the test sees of the one RPC it makes.
    final class Observed: Sendable {
        /// The RPC's mailbox, once its handler has handed the response to it.
        let mailbox = Locked<Feed?>(nil)
        /// Set when the handler has returned: the RPC goes on without its task.
        let handlerReturned = Locked(false)
        let ended = AsyncStream.makeStream(of: String.self)
    }

    /// Expand hands its response to a fresh mailbox and returns.
    struct Publisher: RegistrableRPCService {
        let observed: Observed

        func registerMethods(with router: inout RPCRouter) {
            let observed = observed
            router.registerHandler(forMethod: Pitlane_Test_Echo_Echo.Method.Expand.descriptor) {
                (_: StreamingServerRequest<EchoRequest>, _) in
                StreamingServerResponse { (writer: RPCWriter<EchoResponse>) in
                    let mailbox = Feed(limit: 100_000) { _ in Overflow() }
                    observed.mailbox.value = mailbox
                    try await writer.deliver(from: mailbox) { end in
                        switch end {
                        case .finished: observed.ended.continuation.yield("finished")
                        case .failed(let error): observed.ended.continuation.yield("\(type(of: error))")
                        }
                    }
                    observed.handlerReturned.value = true
                    return [:]
                }
            }
        }
    }

    /// Runs `body` with a client of a server whose Expand is `Publisher`'s.
    func withPublisher(
        interceptors: [any ServerInterceptor] = [],
        _ body: (Pitlane_Test_Echo_Echo.Client<HTTP2ClientTransport>, Observed) async throws -> Void
    ) async throws {
        let observed = Observed()
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: [Publisher(observed: observed)],
            interceptors: interceptors)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                try await body(Pitlane_Test_Echo_Echo.Client(wrapping: client), observed)
            }
        }
    }

    /// The RPC's mailbox, once its handler has returned.
    static func handedOff(_ observed: Observed) async throws -> Feed {
        while !observed.handlerReturned.value { try await Task.sleep(for: .milliseconds(5)) }
        return try #require(observed.mailbox.value)
    }

    @Test("every message arrives once, in order, though the stream falls far behind; the mailbox's failure is the RPC's status")
    func orderAndEnd() async throws {
        let padding = String(repeating: "x", count: 1_024)
        let count = 3_000  // 3 MiB: far past the stream's window and queue
        try await withPublisher { echo, observed in
            try await echo.expand(EchoRequest()) { response in
                let mailbox = try await Self.handedOff(observed)
                for number in 0..<count { mailbox.offer(SerializedMessage(EchoResponse.with { $0.text = "\(number) \(padding)" })) }
                mailbox.end(.failed(RPCError(code: .dataLoss, message: "the feed ended")))
                var numbers: [Int] = []
                let error = await #expect(throws: RPCError.self) {
                    for try await message in response.messages { numbers.append(Int(message.text.prefix { $0 != " " }) ?? -1) }
                }
                #expect(error?.code == .dataLoss)
                #expect(numbers == Array(0..<count))
            }
            #expect(await observed.ended.stream.first { _ in true } == "RPCError")
        }
    }

    @Test("the mailbox finishing ends the RPC with OK")
    func finished() async throws {
        try await withPublisher { echo, observed in
            let texts = try await echo.expand(EchoRequest()) { response in
                let mailbox = try await Self.handedOff(observed)
                mailbox.offer(SerializedMessage(EchoResponse.with { $0.text = "one" }))
                mailbox.offer(SerializedMessage(EchoResponse.with { $0.text = "two" }))
                mailbox.end(.finished)
                var texts: [String] = []
                for try await message in response.messages { texts.append(message.text) }
                return texts
            }
            #expect(texts == ["one", "two"])
            #expect(await observed.ended.stream.first { _ in true } == "finished")
        }
    }

    @Test("the client cancelling ends the mailbox with CancellationError: its subscriber can go")
    func clientCancels() async throws {
        try await withPublisher { echo, observed in
            try await echo.expand(EchoRequest()) { response in
                let mailbox = try await Self.handedOff(observed)
                mailbox.offer(SerializedMessage(EchoResponse.with { $0.text = "one" }))
                for try await _ in response.messages { break }  // one message, then the client goes
            }
            #expect(await observed.ended.stream.first { _ in true } == "CancellationError")
            #expect(observed.mailbox.value?.offer(SerializedMessage(EchoResponse())) == false)
        }
    }

    @Test("the deadline passing ends the mailbox and the RPC with DEADLINE_EXCEEDED")
    func deadline() async throws {
        try await withPublisher { echo, observed in
            let error = await #expect(throws: RPCError.self) {
                try await echo.expand(EchoRequest(), options: .defaults.with { $0.timeout = .seconds(2) }) { response in
                    // The handler has run and handed its response off; then nothing more comes.
                    try await Self.handedOff(observed).offer(SerializedMessage(EchoResponse.with { $0.text = "one" }))
                    for try await _ in response.messages {}
                }
            }
            #expect(error?.code == .deadlineExceeded)
            #expect(await observed.ended.stream.first { _ in true } == "CancellationError")
        }
    }

    @Test("with a server interceptor the handler's task forwards, so that the interceptor sees the response end with the mailbox")
    func intercepted() async throws {
        try await withPublisher(interceptors: [InterceptorParityTests.PassThrough()]) { echo, observed in
            let texts = try await echo.expand(EchoRequest()) { response in
                while observed.mailbox.value == nil { try await Task.sleep(for: .milliseconds(5)) }
                let mailbox = try #require(observed.mailbox.value)
                mailbox.offer(SerializedMessage(EchoResponse.with { $0.text = "one" }))
                var messages = response.messages.makeAsyncIterator()
                var texts = [try await messages.next()?.text]
                #expect(!observed.handlerReturned.value)  // still forwarding
                mailbox.offer(SerializedMessage(EchoResponse.with { $0.text = "two" }))
                mailbox.end(.finished)
                while let message = try await messages.next() { texts.append(message.text) }
                return texts
            }
            #expect(texts == ["one", "two"])
            #expect(observed.handlerReturned.value)
            #expect(await observed.ended.stream.first { _ in true } == "finished")
        }
    }
}
