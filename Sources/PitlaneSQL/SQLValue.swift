/// A value bound to a statement parameter (`?` in the SQL text, numbered from 1 in order).
public enum SQLValue: Sendable, Equatable {
    /// SQL `NULL`.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double-precision floating-point number.
    case real(Double)
    /// A string, sent as UTF-8 text.
    case text(String)
    /// Raw bytes (a `BLOB` in SQLite, `bytea` in PostgreSQL).
    case blob([UInt8])

    /// An integer value from an `Int`, for `.int(count)` rather than `.integer(Int64(count))`.
    public static func int(_ value: Int) -> SQLValue { .integer(Int64(value)) }
}

/// One row of a query's result, read by column (from 0) while the row is current.
public protocol SQLRow {
    /// The column as a 64-bit integer; 0 for NULL.
    func int64(at column: Int32) -> Int64
    /// The column as a floating-point number; 0 for NULL.
    func double(at column: Int32) -> Double
    /// The column as text; empty for NULL.
    func text(at column: Int32) -> String
    /// The column's bytes; empty for NULL.
    func blob(at column: Int32) -> [UInt8]
    /// Whether the column is NULL, which the other accessors cannot tell from 0 or empty.
    func isNull(at column: Int32) -> Bool
}

extension SQLRow {
    /// The column as an `Int`; 0 for NULL.
    public func int(at column: Int32) -> Int { Int(int64(at: column)) }
}

/// Which SQL a connection speaks, for the few statements that differ (schema types,
/// transactions that lock up front, notifications).
public enum SQLDialect: String, Sendable {
    /// SQLite (`sqlite`) or PostgreSQL (`postgres`).
    case sqlite, postgres
}
