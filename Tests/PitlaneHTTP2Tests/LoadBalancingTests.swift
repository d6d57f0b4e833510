import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// Pick-first and round-robin over several servers, each a real Pitlane server on 127.0.0.1.
@Suite("Load balancing over several addresses", .timeLimit(.minutes(5)))
struct LoadBalancingTests {
    /// Counts the RPCs a server handles.
    struct Counter: ServerInterceptor {
        let count = Locked(0)

        func intercept<Input: Sendable, Output: Sendable>(
            request: StreamingServerRequest<Input>, context: ServerContext,
            next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
        ) async throws -> StreamingServerResponse<Output> {
            count.withLock { $0 += 1 }
            return try await next(request, context)
        }
    }

    /// Runs `body` with `count` echo servers, each with its RPC counter.
    func withServers(_ count: Int, _ body: ([(GRPCServer<HTTP2ServerTransport>, Counter, SocketAddress)]) async throws -> Void) async throws
    {
        let servers = (0..<count).map { _ in
            let counter = Counter()
            return (
                GRPCServer(
                    transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)),
                    services: [EchoService()], interceptors: [counter]), counter
            )
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (server, _) in servers { group.addTask { try await server.serve() } }
            defer { for (server, _) in servers { server.beginGracefulShutdown() } }
            var running: [(GRPCServer<HTTP2ServerTransport>, Counter, SocketAddress)] = []
            for (server, counter) in servers {
                running.append((server, counter, try .ipv4("127.0.0.1", port: try #require(try await server.listeningAddress.port))))
            }
            try await body(running)
        }
    }

    @Test("round-robin spreads RPCs evenly over every address")
    func roundRobin() async throws {
        try await withServers(3) { servers in
            var config = HTTP2ClientTransport.Config.defaults
            config.loadBalancing = .roundRobin
            let transport = try HTTP2ClientTransport(target: .addresses(servers.map(\.2)), config: config)
            try await withGRPCClient(transport: transport) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                // The first RPCs go to whichever connections are up while the rest connect.
                try await eventually("every server reached") {
                    _ = try await echo.get(.with { $0.text = "warm-up" })
                    return servers.allSatisfy { $0.1.count.value > 0 }
                }
                let before = servers.map { $0.1.count.value }
                for index in 0..<30 { _ = try await echo.get(.with { $0.text = "\(index)" }) }
                let after = servers.map { $0.1.count.value }
                #expect(zip(after, before).map { $0 - $1 } == [10, 10, 10], "\(before) → \(after)")
            }
        }
    }

    @Test("pick-first sends every RPC to the first address that accepts")
    func pickFirst() async throws {
        try await withServers(2) { servers in
            let transport = try HTTP2ClientTransport(target: .addresses(servers.map(\.2)))
            try await withGRPCClient(transport: transport) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                for index in 0..<10 { _ = try await echo.get(.with { $0.text = "\(index)" }) }
            }
            #expect(servers.map { $0.1.count.value } == [10, 0])
        }
    }

    @Test("round-robin skips an address that refuses connections, after its first failure")
    func roundRobinSkipsDeadAddress() async throws {
        try await withServers(2) { servers in
            let refusing = RefusingPort()
            let deadAddress = try SocketAddress.ipv4("127.0.0.1", port: refusing.port)
            var config = HTTP2ClientTransport.Config.defaults
            config.loadBalancing = .roundRobin
            // The refusing address backs off until the clock moves: here, never.
            config.timeSource = .manual(ManualClock())
            let transport = try HTTP2ClientTransport(target: .addresses([deadAddress] + servers.map(\.2)), config: config)
            var failures = 0
            try await withGRPCClient(transport: transport) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                try await eventually("both live servers reached") {
                    do {
                        _ = try await echo.get(.with { $0.text = "warm-up" })
                    } catch let error as RPCError {
                        #expect(error.code == .unavailable)
                        failures += 1
                    }
                    return servers.allSatisfy { $0.1.count.value > 0 }
                }
                let before = servers.map { $0.1.count.value }
                for index in 0..<20 { _ = try await echo.get(.with { $0.text = "\(index)" }) }
                let after = servers.map { $0.1.count.value }
                #expect(zip(after, before).map { $0 - $1 } == [10, 10], "\(before) → \(after)")
            }
            #expect(failures <= 1, "\(failures) RPCs failed")
        }
    }
}
