import CSQLite
import PitlaneSQL
import Synchronization

/// What SQLite reported, with the statement or operation that failed.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// SQLite's primary result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, ...).
    public let code: Int32
    /// SQLite's explanation, with the file path or SQL text involved where known.
    public let message: String

    /// An error with SQLite's result `code` and `message`.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// `SQLite error <code>: <message>`.
    public var description: String { "SQLite error \(code): \(message)" }
}

/// One connection to an SQLite database file. Not thread-safe by itself: guard it with a lock
/// (or own it from one task) — SQLite's own locking still protects the file across processes.
public final class SQLiteDatabase {
    private let handle: OpaquePointer
    /// Statements `query` compiled, by SQL text, for reuse.
    private var cached: [String: SQLiteStatement] = [:]

    /// Opens (creating if needed) the database at `path`; `":memory:"` for a private in-memory one.
    public init(path: String) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &handle, flags, nil)
        guard result == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw SQLiteError(code: result, message: "cannot open \(path): \(message)")
        }
        self.handle = handle
        sqlite3_busy_timeout(handle, 5_000)
    }

    deinit {
        cached.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that take no parameters and return no rows.
    public func execute(_ sql: String) throws {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if result != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? lastErrorMessage
            sqlite3_free(errorMessage)
            throw SQLiteError(code: result, message: message)
        }
    }

    /// Compiles `sql`; bind its `?` parameters and step it.
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard result == SQLITE_OK, let statement else {
            throw SQLiteError(code: result, message: "\(lastErrorMessage) in: \(sql)")
        }
        return SQLiteStatement(statement: statement, database: self)
    }

    /// The schema version kept in `PRAGMA user_version`, for migrations.
    public var userVersion: Int {
        get throws {
            let statement = try prepare("PRAGMA user_version")
            return try statement.step() ? statement.int(at: 0) : 0
        }
    }

    /// Stores `version` in `PRAGMA user_version`; see ``userVersion``.
    public func setUserVersion(_ version: Int) throws {
        try execute("PRAGMA user_version = \(version)")
    }

    /// The row id the last successful INSERT created.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    var lastErrorMessage: String { String(cString: sqlite3_errmsg(handle)) }

    func error(_ code: Int32) -> SQLiteError { SQLiteError(code: code, message: lastErrorMessage) }
}

/// A compiled statement. Parameters bind from index 1; columns read from index 0.
public final class SQLiteStatement {
    private let statement: OpaquePointer
    private let database: SQLiteDatabase

    init(statement: OpaquePointer, database: SQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit { sqlite3_finalize(statement) }

    /// Binds each value to the parameter of its position, after clearing earlier bindings.
    @discardableResult
    public func bind(_ values: SQLiteValue...) throws -> SQLiteStatement {
        try bind(values)
    }

    /// Binds each value to the parameter of its position (from 1), after resetting the statement and clearing earlier
    /// bindings; returns the statement, for chaining `step()` or `run()`.
    ///
    /// - Throws: ``SQLiteError`` when a value cannot be bound, such as more values than the statement has parameters.
    @discardableResult
    public func bind(_ values: [SQLiteValue]) throws -> SQLiteStatement {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .null: result = sqlite3_bind_null(statement, index)
            case .integer(let value): result = sqlite3_bind_int64(statement, index, value)
            case .real(let value): result = sqlite3_bind_double(statement, index, value)
            case .text(let value): result = sqlite3_bind_text(statement, index, value, -1, sqliteTransient)
            case .blob(let bytes):
                result = bytes.withUnsafeBytes {
                    sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), sqliteTransient)
                }
            }
            guard result == SQLITE_OK else { throw database.error(result) }
        }
        return self
    }

    /// Advances to the next row: true while there is a row to read, false when done.
    @discardableResult
    public func step() throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let result: throw database.error(result)
        }
    }

    /// Runs a statement that returns no rows, then resets it for reuse.
    public func run() throws {
        defer { reset() }
        while try step() {}
    }

    /// Ends the current run so the statement can run again (and releases its read snapshot).
    public func reset() { sqlite3_reset(statement) }

    /// The current row's column as an `Int`; 0 for NULL.
    public func int(at column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
    /// The current row's column as a 64-bit integer; 0 for NULL.
    public func int64(at column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    /// The current row's column as a floating-point number; 0 for NULL.
    public func double(at column: Int32) -> Double { sqlite3_column_double(statement, column) }
    /// Whether the current row's column is NULL.
    public func isNull(at column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    /// The current row's column as text; empty for NULL.
    public func text(at column: Int32) -> String {
        guard let text = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: text)
    }

    /// The current row's column as bytes; empty for NULL.
    public func blob(at column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

/// A value to bind to a statement parameter.
public typealias SQLiteValue = SQLValue

/// SQLITE_TRANSIENT: SQLite copies the bound bytes before the call returns.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

extension SQLiteStatement: SQLRow {}

extension SQLiteDatabase: SQLConnection {
    /// Always `SQLDialect.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// Runs `sql` with `values` bound, calling `row` for each result row; compiled statements are cached by SQL text
    /// (up to 256) and reused.
    public func query(_ sql: String, _ values: [SQLValue], row: (any SQLRow) throws -> Void) throws {
        let statement: SQLiteStatement
        if let reused = cached[sql] {
            statement = reused
        } else {
            statement = try prepare(sql)
            // The services' statements are a fixed set; a bound keeps an odd caller from growing it.
            if cached.count < 256 { cached[sql] = statement }
        }
        try statement.bind(values)
        defer { statement.reset() }
        while try statement.step() { try row(statement) }
    }

    /// Starts a transaction with `BEGIN IMMEDIATE`, taking the write lock up front.
    public func begin() throws { try execute("BEGIN IMMEDIATE") }

    /// Does nothing: an SQLite database has no other processes to notify.
    public func notify(channel: String, payload: String) throws {}
}

/// An SQLite file as an `SQLDatabase`: one connection, lent to one caller at a time, in
/// place (its statements are local and short, so a task may run them).
///
/// `@unchecked Sendable`: the connection is touched only inside `lock`. A `Mutex` holding
/// the connection itself cannot lend it to a synchronous closure that returns a value.
public final class SQLiteStore: SQLDatabase, @unchecked Sendable {
    /// Guards `connection`: it is only touched with the lock held.
    private let lock = Mutex(())
    private let connection: SQLiteDatabase

    /// Opens (creating) the file at `path` in WAL mode; `":memory:"` for a private database.
    public init(path: String, synchronous: String = "FULL") throws {
        let database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = \(synchronous); PRAGMA foreign_keys = ON")
        connection = database
    }

    /// Always `SQLDialect.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// Lends the one connection to `body`, blocking while another caller holds it.
    public func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try lock.withLock { _ in try body(connection) }
    }

    /// Lends the one connection to `body`, in place on the calling task, holding the lock while `body` runs.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try lock.withLock { _ in try body(connection) }
    }

    /// Runs `work` at once, on the calling thread.
    public func perform(_ work: @escaping @Sendable () -> Void) { work() }

    /// Always nil: SQLite has no sessions.
    public func openSession() throws -> (any SQLConnection)? { nil }

    /// Always nil: SQLite has no notifications to listen for.
    public func listen(to channel: String, _ handler: @escaping @Sendable (SQLNotification) -> Void) -> (any SQLListening)? { nil }
}
