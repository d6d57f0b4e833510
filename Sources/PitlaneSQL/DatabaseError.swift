import PitlaneCore

/// A database failure, classified by what a caller can do about it.
public struct DatabaseError: Error, CustomStringConvertible, RPCErrorConvertible {
    /// What the failure means to a caller, such as whether trying again later can help.
    public enum Kind: Sendable, Equatable {
        /// The database cannot be reached or went away mid-statement: try again later.
        case unavailable
        /// A statement ran past the statement timeout.
        case timeout
        /// All connections stayed busy for the whole wait.
        case busy
        /// A constraint (unique, foreign key, ...) refused a change.
        case constraint
        /// Anything else: a bug or a schema that does not match.
        case other
    }

    /// What a caller can do about it.
    public let kind: Kind
    /// The server's code where it gave one (an SQLSTATE for PostgreSQL).
    public let code: String
    /// The database's own explanation, for logs; not sent to RPC clients.
    public let message: String

    /// An error of `kind` with the server's `code` (empty when there is none) and `message`.
    public init(_ kind: Kind, code: String = "", message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    /// `database: message`, or `database (code): message` when there is a code.
    public var description: String { code.isEmpty ? "database: \(message)" : "database (\(code)): \(message)" }

    /// UNAVAILABLE for what passes (the client retries or resumes), INTERNAL for the rest —
    /// with a message that names the kind, not the server's internals.
    public var rpcError: RPCError {
        switch kind {
        case .unavailable: RPCError(code: .unavailable, message: "the database is unavailable; try again")
        case .timeout: RPCError(code: .unavailable, message: "the database did not answer in time; try again")
        case .busy: RPCError(code: .unavailable, message: "the database is busy; try again")
        case .constraint, .other: RPCError(code: .internal, message: "the database refused the operation")
        }
    }
}
