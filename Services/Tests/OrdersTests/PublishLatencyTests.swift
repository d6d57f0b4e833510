import Orders
import PitlaneCore
import ServiceHarness
import TestSupport
import Testing

/// The order tracker's publish latency, on the clock it is given.
@Suite("Publish latency", .timeLimit(.minutes(1)))
struct PublishLatencyTests {
    @Test("each committed publish reports its latency on the service's clock (a manual one that did not move: zero); failed ones none")
    func onTheServicesClock() async throws {
        let log = try OrderLog(path: ":memory:")
        _ = try await log.createOrder(id: "o", customerID: "alice", etaDisplay: "")
        let access = OrderAccess(users: ["t": "alice"])
        let clock = ManualClock()
        let reported = Locked<[Duration]>([])
        let service = OrderTrackingService(log: log, access: access, timeSource: .manual(clock)) { latency in
            reported.withLock { $0.append(latency) }
        }
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [service], interceptors: [access.interceptor()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await withGRPCClient(transport: transport.client, interceptors: [BearerTokenClientInterceptor(token: "t")]) { client in
                let orders = Orders_V1_OrderTracking.Client(wrapping: client)
                for minutes in 1...3 {
                    _ = try await orders.publishUpdate(
                        .with {
                            $0.orderID = "o"
                            $0.etaChanged = .with { $0.etaDisplay = "\(minutes) min" }
                        })
                }
                // No event, and no such order: neither is committed, neither is measured.
                await #expect(throws: RPCError.self) { _ = try await orders.publishUpdate(.with { $0.orderID = "o" }) }
                await #expect(throws: RPCError.self) {
                    _ = try await orders.publishUpdate(
                        .with {
                            $0.orderID = "nope"
                            $0.etaChanged = .with { $0.etaDisplay = "1 min" }
                        })
                }
            }
        }
        // On real time these would be above zero: the durations come from the clock given.
        #expect(reported.value == [.zero, .zero, .zero])
    }
}
