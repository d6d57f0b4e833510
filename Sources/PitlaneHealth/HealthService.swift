import PitlaneCore
import Synchronization

/// A service's serving status, as health checks report it.
public typealias ServingStatus = Grpc_Health_V1_HealthCheckResponse.ServingStatus

/// The standard health service (`grpc.health.v1.Health`): `Check`, `List` and `Watch` report
/// what the server sets with `setStatus(_:forService:)`. The empty service name is the
/// server as a whole. While a dependency the server cannot work without (its database) is
/// unreachable (`setDependency(_:reachable:)`), every service reports NOT_SERVING.
public final class HealthService: Grpc_Health_V1_Health.SimpleServiceProtocol, Sendable {
    private struct State {
        var statuses: [String: ServingStatus] = [:]
        var watchers: [String: [Int: AsyncStream<ServingStatus>.Continuation]] = [:]
        var nextWatcher = 0
        var unreachable: Set<String> = []

        /// What `service` reports now: its own status unless a dependency is down.
        func effective(_ service: String) -> ServingStatus? {
            guard let status = statuses[service] else { return nil }
            return unreachable.isEmpty ? status : .notServing
        }
    }

    private let state = Mutex(State())

    /// A health service with no statuses set: `Check` answers NOT_FOUND for every service until one is set.
    public init() {}

    /// Records a status; watchers of `service` hear about it.
    public func setStatus(_ status: ServingStatus, forService service: String = "") {
        let watchers = state.withLock { state in
            state.statuses[service] = status
            return state.watchers[service, default: [:]].values.map { ($0, state.effective(service) ?? status) }
        }
        for (watcher, status) in watchers { watcher.yield(status) }
    }

    /// Marks a dependency (`name`, such as "database") reachable or not: while any is not,
    /// every service reports NOT_SERVING; once all are back, each reports its own status again.
    public func setDependency(_ name: String, reachable: Bool) {
        let watchers = state.withLock { state in
            let changed = reachable ? state.unreachable.remove(name) != nil : state.unreachable.insert(name).inserted
            guard changed else { return [(AsyncStream<ServingStatus>.Continuation, ServingStatus)]() }
            return state.watchers.flatMap { service, watchers in
                watchers.values.map { ($0, state.effective(service) ?? .serviceUnknown) }
            }
        }
        for (watcher, status) in watchers { watcher.yield(status) }
    }

    /// The status last set for `service`; nil when none was.
    public func status(forService service: String = "") -> ServingStatus? {
        state.withLock { $0.effective(service) }
    }

    /// Marks every known service NOT_SERVING, as a server does when it starts shutting down.
    public func enterNotServing() {
        for service in state.withLock({ Array($0.statuses.keys) }) { setStatus(.notServing, forService: service) }
    }

    /// Answers `Check`: the service's status, NOT_SERVING while a dependency is unreachable.
    ///
    /// - Throws: an `RPCError` with code `.notFound` when no status was set for `request.service`.
    public func check(request: Grpc_Health_V1_HealthCheckRequest, context: ServerContext) async throws -> Grpc_Health_V1_HealthCheckResponse
    {
        guard let status = state.withLock({ $0.effective(request.service) }) else {
            throw RPCError(code: .notFound, message: "unknown service '\(request.service)'")
        }
        return .with { $0.status = status }
    }

    /// Answers `List`: the status of every service a status was set for, NOT_SERVING while a dependency is unreachable.
    public func list(request: Grpc_Health_V1_HealthListRequest, context: ServerContext) async throws -> Grpc_Health_V1_HealthListResponse {
        let statuses = state.withLock { state in state.statuses.keys.map { ($0, state.effective($0) ?? .unknown) } }
        return .with { response in
            for (service, status) in statuses { response.statuses[service] = .with { $0.status = status } }
        }
    }

    /// Sends the current status (SERVICE_UNKNOWN if there is none), then every change, until
    /// the client goes away. A slow watcher sees the latest status, not every step.
    public func watch(
        request: Grpc_Health_V1_HealthCheckRequest, response: RPCWriter<Grpc_Health_V1_HealthCheckResponse>,
        context: ServerContext
    ) async throws {
        let (changes, continuation) = AsyncStream.makeStream(of: ServingStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            let id = state.nextWatcher
            state.nextWatcher += 1
            state.watchers[request.service, default: [:]][id] = continuation
            continuation.yield(state.effective(request.service) ?? .serviceUnknown)
            return id
        }
        defer { _ = state.withLock { $0.watchers[request.service]?.removeValue(forKey: id) } }
        for await status in changes {
            try await response.write(.with { $0.status = status })
        }
    }
}
