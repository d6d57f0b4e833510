/// A value bound to a statement parameter (`?` in the SQL text, numbered from 1 in order).
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public static func int(_ value: Int) -> SQLValue { .integer(Int64(value)) }
}

/// One row of a query's result, read by column (from 0) while the row is current.
public protocol SQLRow {
    func int64(at column: Int32) -> Int64
    func double(at column: Int32) -> Double
    func text(at column: Int32) -> String
    func blob(at column: Int32) -> [UInt8]
    func isNull(at column: Int32) -> Bool
}

extension SQLRow {
    public func int(at column: Int32) -> Int { Int(int64(at: column)) }
}

/// Which SQL a connection speaks, for the few statements that differ (schema types,
/// transactions that lock up front, notifications).
public enum SQLDialect: String, Sendable {
    case sqlite, postgres
}
