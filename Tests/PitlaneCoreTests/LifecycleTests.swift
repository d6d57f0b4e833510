import PitlaneCore
import PitlaneProtobuf
import Synchronization
import TestSupport
import Testing

@Suite("Deadlines, cancellation, shutdown, concurrency and backpressure", .timeLimit(.minutes(5)))
struct LifecycleTests {
    static let waiting = EchoRequest.with { $0.waitForCancellation = true }
    static let deadline = CallOptions.defaults.with { $0.timeout = .seconds(30) }

    @Test("a deadline expires on every RPC kind: the client sees .deadlineExceeded, the handler is cancelled")
    func deadlines() async throws {
        let calls: [@Sendable (Pitlane_Test_Echo_Echo.Client<InProcessTransport.Client>) async throws -> Void] = [
            { _ = try await $0.get(Self.waiting, options: Self.deadline) },
            { _ = try await $0.collect(options: Self.deadline) { try await $0.write(Self.waiting) } },
            { try await $0.expand(Self.waiting, options: Self.deadline) { for try await _ in $0.messages {} } },
            {
                try await $0.update(options: Self.deadline) {
                    try await $0.write(Self.waiting)
                } onResponse: {
                    for try await _ in $0.messages {}
                }
            },
        ]
        for call in calls {
            let probe = Probe()
            let clock = ManualClock()
            try await withEchoServer(service: EchoService(probe: probe), transport: InProcessTransport(timeSource: .manual(clock))) {
                echo, _ in
                async let outcome: RPCError? = {
                    do { try await call(echo) } catch let error as RPCError { return error } catch {}
                    return nil
                }()
                // The handler waits; the deadline has not passed.
                #expect(await probe.next() == "waiting")
                clock.advance(by: .seconds(29))
                #expect(probe.history == ["waiting"])
                clock.advance(by: .seconds(1))
                #expect(await outcome?.code == .deadlineExceeded)
            }
            // The server has drained: the deadline cancelled the handler.
            #expect(probe.history == ["waiting", "cancelled"], "\(probe.history)")
            // Nothing of the RPC's two deadline timers (client and server) is left armed.
            #expect(clock.armedTimers == 0)
        }
    }

    @Test("cancelling the client's task cancels the RPC, and the handler sees it")
    func clientCancellation() async throws {
        let probe = Probe()
        try await withEchoServer(service: EchoService(probe: probe)) { echo, _ in
            let call = Task { try await echo.expand(Self.waiting) { for try await _ in $0.messages {} } }
            #expect(await probe.next() == "waiting")
            call.cancel()
            #expect(await probe.next() == "cancelled")
            let result = await call.result
            #expect(throws: (any Error).self) { try result.get() }
        }
    }

    @Test("graceful shutdown: open streams finish, new RPCs fail with .unavailable, serve returns")
    func gracefulShutdown() async throws {
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [EchoService()])
        let client = GRPCClient(transport: transport.client)
        let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            group.addTask { try await client.runConnections() }
            let (gate, open) = AsyncStream.makeStream(of: Void.self)
            let texts = try await echo.update { writer in
                try await writer.write(.with { $0.text = "before" })
                for await _ in gate {}
                try await writer.write(.with { $0.text = "after" })
            } onResponse: { response in
                var texts: [String] = []
                for try await message in response.messages {
                    texts.append(message.text)
                    if texts.count == 1 {
                        server.beginGracefulShutdown()
                        client.beginGracefulShutdown()
                        await #expect(throws: RPCError.self) { _ = try await echo.get(EchoRequest()) }
                        open.finish()
                    }
                }
                return texts
            }
            #expect(texts == ["before", "after"])
            try await group.waitForAll()
        }
        let late = await #expect(throws: RPCError.self) { _ = try await echo.get(EchoRequest()) }
        #expect(late?.code == .unavailable)
    }

    @Test("10,000 concurrent unary RPCs on one client")
    func manyConcurrentRPCs() async throws {
        try await withEchoServer { echo, _ in
            let count = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<10_000 {
                    group.addTask { try await echo.get(.with { $0.text = "\(index)" }).text == "\(index)" }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(count == 10_000)
        }
    }

    @Test("a server streaming 1 GiB to a slow reader buffers no more than the stream window")
    func backpressure() async throws {
        let window = 256 * 1024
        let transport = InProcessTransport(bufferBytes: window)
        let messageBytes = 64 * 1024
        let count = (1 << 30) / messageBytes
        try await withEchoServer(transport: transport) { echo, _ in
            let received = try await echo.expand(
                .with {
                    $0.repeat = Int32(count)
                    $0.payloadBytes = Int32(messageBytes)
                }
            ) { response in
                var received = 0
                for try await message in response.messages {
                    received += message.payload.count
                    // A slow reader: give every other task a turn before reading on.
                    for _ in 0..<4 { await Task.yield() }
                }
                return received
            }
            #expect(received == 1 << 30)
        }
        // The writer may overshoot the watermark by the message it was writing when it stopped.
        let peak = transport.client.peakBufferedBytes
        #expect(peak <= window + messageBytes + 64)
        #expect(peak > 0)
    }
}
