import PitlaneCore
import PitlaneHTTP2
import Synchronization

/// The session's `ClientManager`: one client for the whole program, connected lazily on first
/// use, its connection reused by every call, and shut down gracefully on `disconnect()`.
public final class ClientManager: Sendable {
    public typealias Client = GRPCClient<HTTP2ClientTransport>

    private enum State {
        case connected(Client, Task<Void, any Error>)
        case disconnected
    }

    private let makeTransport: @Sendable () throws -> HTTP2ClientTransport
    private let interceptors: [any ClientInterceptor]
    private let observer: (any ClientCallObserver)?
    private let state = Mutex(State.disconnected)

    /// - Parameters:
    ///   - interceptors: applied to every call (tracing, logging), the first outermost.
    ///   - observer: told of every call's attempts and end (`ClientMetrics`). Default none.
    public init(
        interceptors: [any ClientInterceptor] = [], observer: (any ClientCallObserver)? = nil,
        makeTransport: @escaping @Sendable () throws -> HTTP2ClientTransport
    ) {
        self.makeTransport = makeTransport
        self.interceptors = interceptors
        self.observer = observer
    }

    /// Runs `body`, on the caller's actor, with the shared client, connecting first if needed.
    public func withClient<T: Sendable>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (Client) async throws -> T
    ) async throws -> T {
        try await body(try connectIfNecessary())
    }

    private func connectIfNecessary() throws -> Client {
        try state.withLock { state in
            switch state {
            case .connected(let client, _):
                return client
            case .disconnected:
                let client = GRPCClient(transport: try makeTransport(), interceptors: interceptors, observer: observer)
                state = .connected(client, Task { try await client.runConnections() })
                return client
            }
        }
    }

    /// Lets open calls finish, then closes the connection; the next call connects again.
    public func disconnect() async {
        let connection: (Client, Task<Void, any Error>)? = state.withLock { state in
            guard case .connected(let client, let task) = state else { return nil }
            state = .disconnected
            return (client, task)
        }
        guard let (client, task) = connection else { return }
        client.beginGracefulShutdown()
        _ = await task.result
    }
}
