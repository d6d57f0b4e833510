import PitlaneCore
import Synchronization

/// A service's serving status, as health checks report it.
public typealias ServingStatus = Grpc_Health_V1_HealthCheckResponse.ServingStatus

/// The standard health service (`grpc.health.v1.Health`): `Check`, `List` and `Watch` report
/// what the server sets with `setStatus(_:forService:)`. The empty service name is the
/// server as a whole.
public final class HealthService: Grpc_Health_V1_Health.SimpleServiceProtocol, Sendable {
    private struct State {
        var statuses: [String: ServingStatus] = [:]
        var watchers: [String: [Int: AsyncStream<ServingStatus>.Continuation]] = [:]
        var nextWatcher = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Records a status; watchers of `service` hear about it.
    public func setStatus(_ status: ServingStatus, forService service: String = "") {
        let watchers = state.withLock { state in
            state.statuses[service] = status
            return Array(state.watchers[service, default: [:]].values)
        }
        for watcher in watchers { watcher.yield(status) }
    }

    /// The status last set for `service`; nil when none was.
    public func status(forService service: String = "") -> ServingStatus? {
        state.withLock { $0.statuses[service] }
    }

    /// Marks every known service NOT_SERVING, as a server does when it starts shutting down.
    public func enterNotServing() {
        for service in state.withLock({ Array($0.statuses.keys) }) { setStatus(.notServing, forService: service) }
    }

    public func check(request: Grpc_Health_V1_HealthCheckRequest, context: ServerContext) async throws -> Grpc_Health_V1_HealthCheckResponse {
        guard let status = state.withLock({ $0.statuses[request.service] }) else {
            throw RPCError(code: .notFound, message: "unknown service '\(request.service)'")
        }
        return .with { $0.status = status }
    }

    public func list(request: Grpc_Health_V1_HealthListRequest, context: ServerContext) async throws -> Grpc_Health_V1_HealthListResponse {
        let statuses = state.withLock { $0.statuses }
        return .with { response in
            for (service, status) in statuses { response.statuses[service] = .with { $0.status = status } }
        }
    }

    /// Sends the current status (SERVICE_UNKNOWN if there is none), then every change, until
    /// the client goes away. A slow watcher sees the latest status, not every step.
    public func watch(request: Grpc_Health_V1_HealthCheckRequest, response: RPCWriter<Grpc_Health_V1_HealthCheckResponse>,
                      context: ServerContext) async throws {
        let (changes, continuation) = AsyncStream.makeStream(of: ServingStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            let id = state.nextWatcher
            state.nextWatcher += 1
            state.watchers[request.service, default: [:]][id] = continuation
            continuation.yield(state.statuses[request.service] ?? .serviceUnknown)
            return id
        }
        defer { _ = state.withLock { $0.watchers[request.service]?.removeValue(forKey: id) } }
        for await status in changes {
            try await response.write(.with { $0.status = status })
        }
    }
}
