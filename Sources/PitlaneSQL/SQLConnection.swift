/// One open connection: statements run one at a time, in the caller's thread. SQL is written
/// once for both dialects with `?` placeholders; a connection rewrites them as its server
/// wants and keeps each statement prepared for reuse.
public protocol SQLConnection: AnyObject {
    /// Which SQL the connection speaks, for the statements that differ between SQLite and PostgreSQL.
    var dialect: SQLDialect { get }

    /// Runs statements that take no parameters and return no rows (a schema script).
    func execute(_ sql: String) throws

    /// Runs one statement, calling `row` for each row it returns, in order.
    func query(_ sql: String, _ values: [SQLValue], row: (any SQLRow) throws -> Void) throws

    /// Starts a transaction that takes the database's write lock up front where the dialect
    /// needs that to avoid deadlocks (SQLite's `BEGIN IMMEDIATE`).
    func begin() throws

    /// Tells every listener of `channel` (in any process) `payload` once the transaction
    /// commits; nothing when it rolls back. Only PostgreSQL has other processes to tell:
    /// SQLite's does nothing.
    func notify(channel: String, payload: String) throws
}

extension SQLConnection {
    /// Runs a statement that returns no rows (or whose rows do not matter).
    public func run(_ sql: String, _ values: SQLValue...) throws {
        try query(sql, values) { _ in }
    }

    /// The first row mapped by `transform`; nil when there is none.
    public func first<T>(_ sql: String, _ values: SQLValue..., as transform: (any SQLRow) throws -> T) throws -> T? {
        var result: T?
        try query(sql, values) { row in
            if result == nil { result = try transform(row) }
        }
        return result
    }

    /// Every row mapped by `transform`, in order.
    public func all<T>(_ sql: String, _ values: SQLValue..., as transform: (any SQLRow) throws -> T) throws -> [T] {
        var results: [T] = []
        try query(sql, values) { results.append(try transform($0)) }
        return results
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try begin()
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}
