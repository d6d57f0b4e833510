/// A database the services keep their state in: SQLite (one process, embedded) or
/// PostgreSQL (shared by every replica). Connections are lent out one caller at a time.
public protocol SQLDatabase: Sendable {
    /// Which SQL the database's connections speak.
    var dialect: SQLDialect { get }

    /// Lends a connection to `body`, blocking the calling thread while it waits for one and
    /// while `body` runs. For threads that may block: dispatch queues, not tasks.
    func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T

    /// Lends a connection to `body` without blocking the task's thread for long: SQLite runs it
    /// in place (its statements are local and short), PostgreSQL on a thread of its own.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T

    /// Runs `work`, which may block on this database, where blocking is allowed: in place
    /// for SQLite (as `withConnection` runs), on a thread of the pool for PostgreSQL.
    func perform(_ work: @escaping @Sendable () -> Void)

    /// A connection of its own, outside any pool, for state that lives as long as a session
    /// (advisory locks); closed when released. Nil where sessions mean nothing (SQLite).
    func openSession() throws -> (any SQLConnection)?

    /// Calls `handler` with what is notified on `channel` (`SQLConnection.notify`) by any
    /// process, and with the listener's own ups and downs, until the returned listening is
    /// stopped. Nil where there are no other processes to hear from (SQLite).
    func listen(to channel: String, _ handler: @escaping @Sendable (SQLNotification) -> Void) -> (any SQLListening)?
}

extension SQLDatabase {
    /// Runs `body` in one transaction on a lent connection.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await withConnection { connection in try connection.transaction { try body(connection) } }
    }

    /// Runs `body` in one transaction on a lent connection, blocking.
    public func transactionBlocking<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try withConnection { connection in try connection.transaction { try body(connection) } }
    }
}

/// What a listener hears.
public enum SQLNotification: Sendable, Equatable {
    /// The payloads that arrived together, in commit order.
    case payloads([String])
    /// Listening (again): notifications may have been missed since `.lost`; read back what
    /// matters from the tables.
    case listening
    /// The listening connection is gone; it is being reopened.
    case lost(String)
}

/// A listener started by `SQLDatabase.listen`.
public protocol SQLListening: Sendable {
    /// Stops listening and waits until the handler is no longer called.
    func stop()
}
