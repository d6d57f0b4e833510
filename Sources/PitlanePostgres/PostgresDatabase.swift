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
    /// How each connection is opened: the server's URL and per-connection settings.
    public let settings: PostgresSettings
    /// The most connections open at once (at least 1). Default 16.
    public let maxConnections: Int
    /// The most callers that may wait for a connection; more fail at once with `.busy`. Default 1,024.
    public let maxWaiting: Int
    /// How long a caller waits for a free connection before failing with `.busy`. Default 5 s.
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

    /// Always `SQLDialect.postgres`.
    public var dialect: SQLDialect { .postgres }

    /// Lends a pooled connection (opening one if none is idle) to `body`, blocking the calling thread while it waits and runs.
    ///
    /// When a reused connection turns out dead at `body`'s first statement and that statement was a `BEGIN` or `SELECT`,
    /// `body` runs once more on a new connection, so it must be safe to repeat up to that point.
    ///
    /// - Throws: `DatabaseError` `.busy` when too many callers wait or none is free within ``acquireTimeout``,
    ///   `.unavailable` when no connection can be opened, or whatever `body` throws.
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

    /// Lends a pooled connection to `body` on a thread of the pool's dispatch queue, so the calling task never blocks on
    /// the network; otherwise as the blocking `withConnection(_:)`.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            workers.async {
                continuation.resume(with: Result { try self.withConnection(body) })
            }
        }
    }

    /// Runs `work` asynchronously on a thread of the pool's dispatch queue, where it may block.
    public func perform(_ work: @escaping @Sendable () -> Void) { workers.async(execute: work) }

    /// Opens a new connection outside the pool, for session state such as advisory locks; it closes when released.
    ///
    /// - Throws: `DatabaseError` `.unavailable` when the server cannot be reached.
    public func openSession() throws -> (any SQLConnection)? { try PostgresConnection(settings) }

    /// Connections open and idle now, for metrics.
    public var idleConnections: Int { idle.withLock { $0.count } }

    /// Starts a ``PostgresListener`` on `channel`, with a connection and a thread of its own.
    public func listen(to channel: String, _ handler: @escaping @Sendable (SQLNotification) -> Void) -> (any SQLListening)? {
        PostgresListener(settings: settings, channel: channel, handler: handler)
    }
}
