import Foundation
import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// Clients that break the rules, made with Python's h2 library: the server answers each as
/// gRPC's PROTOCOL-HTTP2.md says, and keeps serving well-behaved clients.
@Suite("HTTP/2 server against hostile peers", .timeLimit(.minutes(3)))
struct HostilePeerTests {
    static let hostilePeer = GRPCPeerTests.repositoryRoot.appending(path: "Tests/Peers/hostile_peer.py").path

    @Test(
        "garbage preface, no content-type, bad grpc-timeout, 1 GiB prefix, unknown encoding, ping flood, rapid reset, SETTINGS/WINDOW_UPDATE/PING/CONTINUATION floods, oversized headers, zero-window client"
    )
    func hostilePeers() async throws {
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: [EchoService()]
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            let attacks = try await GRPCPeerTests.run([Self.hostilePeer, "--port", String(port)])
            #expect(attacks.contains("checks: 16 ok, 0 failed"), "\(attacks)")
            // grpcio, after all that, on the same server.
            let afterwards = try await GRPCPeerTests.run([
                GRPCPeerTests.peer, "client", "--port", String(port), "--protos", GRPCPeerTests.protos,
            ])
            #expect(afterwards.contains("checks: 13 ok, 0 failed"), "\(afterwards)")
        }
    }

    @Test("connect timeout: a server that never completes the TCP handshake fails the RPC with .unavailable")
    func connectTimeout() async throws {
        // A listener whose accept queue is full: the kernel drops further SYNs, so a new
        // connect stays pending, as towards a host that has gone dark.
        let listener = try Socket.listen(on: .ipv4("127.0.0.1", port: 0), backlog: 0)
        let address = try listener.localAddress
        var fillers: [Socket] = []
        for _ in 0..<3 {
            let filler = try Socket(for: address)
            _ = try? filler.connect(to: address)
            fillers.append(filler)
        }
        let clock = ManualClock()
        var config = HTTP2ClientTransport.Config.defaults
        config.timeSource = .manual(clock)
        let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: try #require(address.port)), config: config)
        try await withGRPCClient(transport: transport) { client in
            let error = try await Self.outcome(stepping: clock) {
                try await Pitlane_Test_Echo_Echo.Client(wrapping: client).get(EchoRequest())
            }
            #expect(error?.code == .unavailable)
            #expect(error?.message.contains("no answer within") == true, "\(String(describing: error))")
        }
        for filler in fillers { filler.close() }
        listener.close()
    }

    @Test("client keepalive: a server that never answers is detected and the RPC fails with .unavailable")
    func keepaliveDetectsSilentServer() async throws {
        // A listener nobody accepts from: the kernel completes the TCP handshake and then
        // nothing ever answers, like a peer that vanished.
        let silent = try Socket.listen(on: .ipv4("127.0.0.1", port: 0))
        let port = try #require(try silent.localAddress.port)
        let clock = ManualClock()
        var config = HTTP2ClientTransport.Config.defaults
        config.timeSource = .manual(clock)
        config.keepalive = .init(time: .seconds(10), timeout: .seconds(5))
        let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port), config: config)
        try await withGRPCClient(transport: transport) { client in
            let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
            let error = try await Self.outcome(stepping: clock) { try await echo.get(EchoRequest()) }
            #expect(error?.code == .unavailable)
            #expect(error?.message.contains("keepalive") == true, "\(String(describing: error))")
        }
        silent.close()
    }

    @Test("max connection idle: a connection without streams gets GOAWAY")
    func idleConnections() async throws {
        try await withIdleLimitedServer { port in
            let idle = try await GRPCPeerTests.run([Self.hostilePeer, "--port", String(port), "--only", "idle_connection"])
            #expect(idle.contains("checks: 1 ok, 0 failed"), "\(idle)")
        }
    }

    @Test("preface timeout: a connection that sends half the client preface and stalls is closed")
    func halfPrefaceStall() async throws {
        try await withPrefaceLimitedServer(timeout: .seconds(1)) { port in
            let stall = try await GRPCPeerTests.run([
                Self.hostilePeer, "--port", String(port), "--only", "half_preface_stall", "--stall-bound", "5",
            ])
            #expect(stall.contains("checks: 1 ok, 0 failed"), "\(stall)")
        }
    }

    @Test("a connection that goes away as an RPC starts fails the RPC or moves it; it never hangs")
    func connectionGoneAtStart() async throws {
        // A 1 ms idle limit: the server sends GOAWAY about as soon as each connection opens.
        try await withIdleLimitedServer(idle: .milliseconds(1)) { port in
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                let guarded = CallOptions.defaults.with { $0.timeout = .seconds(10) }
                for _ in 0..<20 {
                    do {
                        let response = try await echo.get(.with { $0.text = "race" }, options: guarded)
                        #expect(response.text == "race")
                    } catch let error as RPCError {
                        #expect(error.code == .unavailable || error.code == .cancelled, "\(error)")
                    }
                }
            }
        }
    }

    @Test("max connection idle: a unary RPC and then a long stream run under an idle limit; the stream is not cut")
    func busyConnections() async throws {
        let clock = ManualClock()
        try await withIdleLimitedServer(idle: .seconds(1), timeSource: .manual(clock)) { port in
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                let one = try await echo.get(.with { $0.text = "one" })
                #expect(one.text == "one")
                clock.advance(by: .milliseconds(500))  // idle, but not for long enough
                let received = try await echo.expand(
                    .with {
                        $0.repeat = 2000
                        $0.payloadBytes = 1000
                    }
                ) { response in
                    var messages = 0
                    for try await _ in response.messages {
                        messages += 1
                        // Long past the idle limit, while the stream is open.
                        if messages == 1 { clock.advance(by: .seconds(10)) }
                    }
                    return messages
                }
                #expect(received == 2000)
            }
        }
    }

    /// The error `call` ends with (nil if it succeeds), while `clock` moves a second at a time;
    /// real time bounds only how long that may take.
    static func outcome(stepping clock: ManualClock, _ call: @escaping @Sendable () async throws -> some Sendable) async throws -> RPCError?
    {
        try await withThrowingTaskGroup(of: RPCError?.self) { group in
            group.addTask {
                do { _ = try await call() } catch let error as RPCError { return error }
                return nil
            }
            group.addTask {
                for _ in 0..<10_000 {
                    clock.advance(by: .seconds(1))
                    try await Task.sleep(for: .milliseconds(2))
                }
                throw TimedOut(what: "the call's outcome", limit: .seconds(20))
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// A server that closes connections idle for `idle`, serving while `body` runs.
    func withIdleLimitedServer(
        idle: Duration = .milliseconds(200), timeSource: TimeSource = .continuous,
        _ body: (Int) async throws -> Void
    ) async throws {
        try await withEchoServer(
            {
                $0.connection.maxIdle = idle
                $0.timeSource = timeSource
            }, body)
    }

    /// A server that closes connections whose client preface has not come within `timeout`, serving while `body` runs.
    func withPrefaceLimitedServer(timeout: Duration, _ body: (Int) async throws -> Void) async throws {
        try await withEchoServer({ $0.connection.prefaceTimeout = timeout }, body)
    }

    /// An echo server on 127.0.0.1 with its config changed by `configure`, serving while `body` runs with its port.
    func withEchoServer(_ configure: (inout HTTP2ServerTransport.Config) -> Void, _ body: (Int) async throws -> Void) async throws {
        var config = HTTP2ServerTransport.Config.defaults
        configure(&config)
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), config: config),
            services: [EchoService()]
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await body(try #require(try await server.listeningAddress.port))
        }
    }
}
