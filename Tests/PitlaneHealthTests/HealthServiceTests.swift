import PitlaneCore
import PitlaneHealth
import Testing

/// `grpc.health.v1.Health` through a client, on the in-process transport: Check, List and
/// Watch report what the server sets, and a dependency that is down makes every service
/// NOT_SERVING until it is back.
@Suite("Health service", .timeLimit(.minutes(1)))
struct HealthServiceTests {
    typealias Health = Grpc_Health_V1_Health.Client<InProcessTransport.Client>

    func withHealth(_ body: (HealthService, Health) async throws -> Void) async throws {
        let service = HealthService()
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [service])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await withGRPCClient(transport: transport.client) { client in
                try await body(service, Health(wrapping: client))
            }
        }
    }

    func status(of service: String, _ health: Health) async throws -> ServingStatus {
        let request = Grpc_Health_V1_HealthCheckRequest.with { $0.service = service }
        return try await health.check(request).status
    }

    @Test("Check: NOT_FOUND for a service never set; its status once set; the server as a whole under \"\"")
    func check() async throws {
        try await withHealth { service, health in
            await #expect { _ = try await health.check(.with { $0.service = "orders" }) } throws: {
                ($0 as? RPCError)?.code == .notFound
            }
            service.setStatus(.serving)
            service.setStatus(.notServing, forService: "orders")
            let whole = try await status(of: "", health)
            #expect(whole == .serving)
            let orders = try await status(of: "orders", health)
            #expect(orders == .notServing)
        }
    }

    @Test("a dependency down makes every service NOT_SERVING; back up, each reports its own status again")
    func dependencies() async throws {
        try await withHealth { service, health in
            service.setStatus(.serving)
            service.setStatus(.serving, forService: "orders")
            service.setDependency("database", reachable: false)
            let whileDown = try await status(of: "orders", health)
            #expect(whileDown == .notServing)
            let list = try await health.list(Grpc_Health_V1_HealthListRequest())
            let listed = list.statuses.mapValues(\.status)
            #expect(listed == ["": .notServing, "orders": .notServing])
            service.setDependency("database", reachable: true)
            let backUp = try await status(of: "orders", health)
            #expect(backUp == .serving)
            service.enterNotServing()
            #expect(service.status() == .notServing && service.status(forService: "orders") == .notServing)
        }
    }

    @Test("Watch: SERVICE_UNKNOWN first for a service never set, then each change")
    func watch() async throws {
        try await withHealth { service, health in
            let seen = try await health.watch(request: ClientRequest(message: .with { $0.service = "races" })) { response in
                var seen: [ServingStatus] = []
                for try await update in response.messages {
                    seen.append(update.status)
                    switch seen.count {
                    case 1: service.setStatus(.serving, forService: "races")
                    case 2: service.setStatus(.notServing, forService: "races")
                    default: return seen
                    }
                }
                return seen
            }
            #expect(seen == [.serviceUnknown, .serving, .notServing])
        }
    }
}
