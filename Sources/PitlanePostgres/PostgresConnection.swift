import CLibPQ
import Glibc
import PitlaneSQL

/// How connections are opened: the server's URL and what every connection sets.
public struct PostgresSettings: Sendable {
    /// A libpq URI (`postgresql://user@host:port/db?...`, `postgres://` too) or `key=value` string.
    public var url: String
    /// How long opening a connection may take before the database counts as unreachable.
    public var connectTimeoutSeconds = 3
    /// How long one statement may run before the server cancels it.
    public var statementTimeoutMilliseconds = 5_000
    /// Shown in `pg_stat_activity`.
    public var applicationName = "pitlane"

    /// Settings for the server at `url`, with the other values at their defaults (3 s connect, 5,000 ms statement timeout).
    public init(url: String) { self.url = url }

    /// The URL's settings override these defaults (libpq reads the arrays in order; the
    /// expanded URL comes last).
    var parameters: [(String, String)] {
        [
            ("connect_timeout", String(connectTimeoutSeconds)),
            ("options", "-c statement_timeout=\(statementTimeoutMilliseconds) -c client_min_messages=warning"),
            ("application_name", applicationName),
            // A server that vanished without closing (a partition) is noticed in about 15 s.
            ("keepalives", "1"), ("keepalives_idle", "5"), ("keepalives_interval", "2"), ("keepalives_count", "5"),
            ("dbname", url),
        ]
    }
}

/// One connection to PostgreSQL through libpq, used by one thread at a time. Statements are
/// prepared on first use and kept (up to `preparedLimit`); parameters go as text (bytes as
/// binary) so the server infers their types, results come back binary.
/// Sendable only to move between threads (the pool lends it to one at a time).
public final class PostgresConnection: SQLConnection, @unchecked Sendable {
    let handle: OpaquePointer
    private var prepared: [String: String] = [:]
    /// Statements sent so far, and whether the last one changed nothing by itself (a `BEGIN`
    /// or a `SELECT`): the pool retries a lent connection that failed at its first such
    /// statement.
    private(set) var statementsSent = 0
    private(set) var lastStatementWasHarmless = false
    static let preparedLimit = 256

    /// Opens a connection; `DatabaseError.unavailable` when the server cannot be reached.
    public init(_ settings: PostgresSettings) throws {
        let parameters = settings.parameters
        let connection = withCStrings(parameters.map(\.0)) { keywords in
            withCStrings(parameters.map(\.1)) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else { throw DatabaseError(.unavailable, message: "libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(connection))
            PQfinish(connection)
            throw DatabaseError(.unavailable, message: message)
        }
        handle = connection
    }

    deinit { PQfinish(handle) }

    /// Always `SQLDialect.postgres`.
    public var dialect: SQLDialect { .postgres }

    /// False once the connection broke: the pool drops it instead of lending it again.
    public var isUsable: Bool { PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE }

    /// Whether the server is still there: reads what waits on the socket without blocking, so
    /// a server that closed the connection while it sat idle (a restart) is noticed before a
    /// statement is sent on it.
    var isAlive: Bool { PQconsumeInput(handle) == 1 && isUsable }

    /// The socket, for `poll` (the listener).
    var socket: Int32 { PQsocket(handle) }

    /// Runs `sql` as a simple query; it may hold several statements.
    ///
    /// - Throws: `DatabaseError`, classified by the server's SQLSTATE (`.unavailable` when the connection broke).
    public func execute(_ sql: String) throws {
        noteSent(sql)
        try check(PQexec(handle, sql)).clear()
    }

    /// Runs `sql` with its `?` placeholders bound to `values`, preparing it on first use, and calls `row` for each result row.
    ///
    /// - Throws: `DatabaseError`, classified by the server's SQLSTATE, or whatever `row` throws.
    public func query(_ sql: String, _ values: [SQLValue], row: (any SQLRow) throws -> Void) throws {
        let result = try check(execute(sql, values))
        defer { result.clear() }
        let rows = PQntuples(result.handle)
        var current = PostgresRow(result: result.handle, row: 0)
        while current.row < rows {
            try row(current)
            current.row += 1
        }
    }

    /// Starts a transaction with `BEGIN`.
    public func begin() throws { try execute("BEGIN") }

    /// Sends `payload` on `channel` with `pg_notify`; listeners hear it when the transaction commits.
    public func notify(channel: String, payload: String) throws {
        try run("SELECT pg_notify(?, ?)", .text(channel), .text(payload))
    }

    private func execute(_ sql: String, _ values: [SQLValue]) throws -> OpaquePointer? {
        noteSent(sql)
        let name = try statementName(for: sql)
        var texts: [String?] = []
        var blobs: [[UInt8]?] = []
        for value in values {
            switch value {
            case .null:
                texts.append(nil)
                blobs.append(nil)
            case .integer(let number):
                texts.append(String(number))
                blobs.append(nil)
            case .real(let number):
                texts.append("\(number)")
                blobs.append(nil)
            case .text(let string):
                texts.append(string)
                blobs.append(nil)
            case .blob(let bytes):
                texts.append(nil)
                blobs.append(bytes)
            }
        }
        let formats = blobs.map { $0 == nil ? Int32(0) : 1 }
        return withParameterPointers(texts, blobs) { pointers, lengths in
            if let name {
                return PQexecPrepared(handle, name, Int32(values.count), pointers, lengths, formats, 1)
            }
            return PQexecParams(handle, Self.numbered(sql), Int32(values.count), nil, pointers, lengths, formats, 1)
        }
    }

    private func noteSent(_ sql: String) {
        statementsSent += 1
        lastStatementWasHarmless = sql.hasPrefix("BEGIN") || sql.hasPrefix("SELECT")
    }

    /// The prepared statement for `sql`, preparing it now if needed; nil past the limit (the
    /// statement then runs unnamed).
    private func statementName(for sql: String) throws -> String? {
        if let name = prepared[sql] { return name }
        guard prepared.count < Self.preparedLimit else { return nil }
        let name = "p\(prepared.count)"
        try check(PQprepare(handle, name, Self.numbered(sql), 0, nil)).clear()
        prepared[sql] = name
        return name
    }

    /// `?` placeholders as `$1, $2...`, outside quoted strings and identifiers.
    static func numbered(_ sql: String) -> String {
        var output = ""
        output.reserveCapacity(sql.utf8.count + 8)
        var number = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                output.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                output.append(character)
            } else if character == "?" {
                number += 1
                output += "$\(number)"
            } else {
                output.append(character)
            }
        }
        return output
    }

    /// The result when it succeeded; a classified `DatabaseError` (and the result cleared)
    /// when it did not.
    private func check(_ result: OpaquePointer?) throws -> PostgresResult {
        guard let result else {
            throw DatabaseError(.unavailable, message: Self.trimmed(PQerrorMessage(handle)))
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresResult(handle: result)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = Self.trimmed(PQresultErrorMessage(result))
            PQclear(result)
            let broken = PQstatus(handle) != CONNECTION_OK
            throw DatabaseError(broken ? .unavailable : Self.kind(ofState: state), code: state, message: message)
        }
    }

    /// What an SQLSTATE means to a caller.
    static func kind(ofState state: String) -> DatabaseError.Kind {
        switch state {
        case "57014": .timeout  // query_canceled: the statement timeout
        case "57P01", "57P02", "57P03", "53300", "40001", "40P01": .unavailable  // shutting down, too many connections, conflicts
        case _ where state.hasPrefix("08"): .unavailable  // connection exceptions
        case _ where state.hasPrefix("23"): .constraint
        default: .other
        }
    }

    static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        var text = String(cString: message)
        while text.last?.isWhitespace == true { text.removeLast() }
        return text
    }
}

/// A result libpq allocated; cleared once.
struct PostgresResult {
    let handle: OpaquePointer
    func clear() { PQclear(handle) }
}

/// A row of a binary result. Integers and floats are big-endian; text and bytes as they are.
struct PostgresRow: SQLRow {
    let result: OpaquePointer
    var row: Int32

    private enum TypeID: UInt32 {
        case bool = 16
        case int8 = 20
        case int2 = 21
        case int4 = 23
        case float4 = 700
        case float8 = 701
    }

    private func bytes(at column: Int32) -> UnsafeRawBufferPointer {
        guard let value = PQgetvalue(result, row, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: value, count: Int(PQgetlength(result, row, column)))
    }

    private func bigEndian(at column: Int32) -> UInt64 {
        bytes(at: column).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    func isNull(at column: Int32) -> Bool { PQgetisnull(result, row, column) == 1 }

    func int64(at column: Int32) -> Int64 {
        guard !isNull(at: column) else { return 0 }
        let raw = bigEndian(at: column)
        switch TypeID(rawValue: PQftype(result, column)) {
        case .int2: return Int64(Int16(truncatingIfNeeded: raw))
        case .int4: return Int64(Int32(truncatingIfNeeded: raw))
        case .bool: return Int64(raw)
        default: return Int64(bitPattern: raw)
        }
    }

    func double(at column: Int32) -> Double {
        guard !isNull(at: column) else { return 0 }
        let raw = bigEndian(at: column)
        switch TypeID(rawValue: PQftype(result, column)) {
        case .float4: return Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw)))
        case .float8: return Double(bitPattern: raw)
        default: return Double(int64(at: column))
        }
    }

    func text(at column: Int32) -> String { String(decoding: bytes(at: column), as: UTF8.self) }

    func blob(at column: Int32) -> [UInt8] { Array(bytes(at: column)) }
}

/// Calls `body` with NUL-terminated copies of `strings`, as a C array.
func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer<CChar>($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Calls `body` with the parameter values as libpq wants them: NUL-terminated text, or bytes
/// with their lengths, nil for NULL.
private func withParameterPointers<T>(
    _ texts: [String?], _ blobs: [[UInt8]?],
    _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?) -> T
) -> T {
    var storage: [UnsafeMutablePointer<CChar>?] = []
    var lengths: [Int32] = []
    for (text, blob) in zip(texts, blobs) {
        if let text {
            storage.append(strdup(text))
            lengths.append(0)
        } else if let blob {
            let copy = malloc(max(1, blob.count))!
            blob.withUnsafeBytes { if let source = $0.baseAddress { copy.copyMemory(from: source, byteCount: blob.count) } }
            storage.append(copy.assumingMemoryBound(to: CChar.self))
            lengths.append(Int32(blob.count))
        } else {
            storage.append(nil)
            lengths.append(0)
        }
    }
    defer { storage.forEach { free($0) } }
    let pointers = storage.map { UnsafePointer<CChar>($0) }
    return pointers.withUnsafeBufferPointer { values in
        lengths.withUnsafeBufferPointer { body(values.baseAddress, $0.baseAddress) }
    }
}
