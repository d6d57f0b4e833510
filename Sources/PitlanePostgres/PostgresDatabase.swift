import Dispatch
import PitlaneSQL
import Synchronization

/// PostgreSQL as an `SQLDatabase`: a bounded pool of connections shared by the tasks of one
/// process, and a listener for notifications from every process.
///
/// At most `maxConnections` connections are open; a caller waits up to `acquireTimeout` for
/// one, and at most `maxWaiting` callers wait (more fail at once with `.busy`). Connections
/// open lazily, and one that broke (or that the server closed while it sat idle) is dropped,
/// not lent again: while the server is down each
/// call fails fast with `.unavailable` (opening a connection is refused), and calls succeed
/// again as soon as it is back.
public final class PostgresDatabase: SQLDatabase {
    public let settings: PostgresSettings
    public let maxConnections: Int
    public let maxWaiting: Int
    public let acquireTimeout: Duration

    private let permits: DispatchSemaphore
    private let idle = Mutex<[PostgresConnection]>([])
    private let waiting = Atomic(0)
    /// Where async callers' statements run, so tasks never block on the network.
    private let workers = DispatchQueue(label: "pitlane.postgres", attributes: .concurrent)

    /// Checks the server is reachable (one connection, kept in the pool) unless `connectNow`
    /// is false.
    public init(
        settings: PostgresSettings, maxConnections: Int = 16, maxWaiting: Int = 1_024,
        acquireTimeout: Duration = .seconds(5), connectNow: Bool = true
    ) throws {
        self.settings = settings
        self.maxConnections = max(1, maxConnections)
        self.maxWaiting = maxWaiting
        self.acquireTimeout = acquireTimeout
        permits = DispatchSemaphore(value: self.maxConnections)
        if connectNow { try withConnection { _ in } }
    }

    public var dialect: SQLDialect { .postgres }

    public func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        guard waiting.add(1, ordering: .relaxed).newValue <= maxWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            throw DatabaseError(.busy, message: "more than \(maxWaiting) callers are waiting for a connection")
        }
        let milliseconds = Int(acquireTimeout.components.seconds * 1_000 + acquireTimeout.components.attoseconds / 1_000_000_000_000_000)
        let acquired = permits.wait(timeout: .now() + .milliseconds(milliseconds))
        waiting.subtract(1, ordering: .relaxed)
        guard acquired == .success else {
            throw DatabaseError(.busy, message: "no connection was free for \(acquireTimeout)")
        }
        defer { permits.signal() }
        // An idle connection the server closed meanwhile (it restarted) is dropped, not lent.
        var reused = idle.withLock { $0.popLast() }
        while let candidate = reused, !candidate.isAlive { reused = idle.withLock { $0.popLast() } }
        let connection = try reused ?? PostgresConnection(settings)
        let sentBefore = connection.statementsSent
        var result = Result { try body(connection) }
        if connection.isUsable {
            idle.withLock { $0.append(connection) }
        } else if reused != nil, case .failure(let error as DatabaseError) = result, error.kind == .unavailable,
            connection.statementsSent == sentBefore + 1, connection.lastStatementWasHarmless
        {
            // A reused connection that was dead although it looked alive, found out by a first
            // statement that changed nothing (BEGIN, SELECT): once more, on a new connection.
            let fresh = try PostgresConnection(settings)
            result = Result { try body(fresh) }
            if fresh.isUsable { idle.withLock { $0.append(fresh) } }
        }
        return try result.get()
    }

    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            workers.async {
                continuation.resume(with: Result { try self.withConnection(body) })
            }
        }
    }

    public func perform(_ work: @escaping @Sendable () -> Void) { workers.async(execute: work) }

    public func openSession() throws -> (any SQLConnection)? { try PostgresConnection(settings) }

    /// Connections open and idle now, for metrics.
    public var idleConnections: Int { idle.withLock { $0.count } }

    public func listen(to channel: String, _ handler: @escaping @Sendable (SQLNotification) -> Void) -> (any SQLListening)? {
        PostgresListener(settings: settings, channel: channel, handler: handler)
    }
}
