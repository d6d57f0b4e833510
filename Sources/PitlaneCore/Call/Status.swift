/// The outcome of an RPC: a code and a message, as sent in `grpc-status` and `grpc-message`.
public struct Status: Sendable, Hashable, CustomStringConvertible {
    /// gRPC's status codes (doc/statuscodes.md), OK included.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The number on the wire, 0 to 16.
        public let rawValue: Int

        /// The code with this number on the wire; nil unless `rawValue` is in 0...16.
        public init?(rawValue: Int) {
            guard (0...16).contains(rawValue) else { return nil }
            self.rawValue = rawValue
        }

        private init(_ rawValue: Int) { self.rawValue = rawValue }

        /// The RPC completed successfully; the only code that is not an error.
        public static let ok = Code(0)
        /// The RPC was cancelled, usually by the caller.
        public static let cancelled = Code(1)
        /// An error with no better code, such as one a handler threw that is not an `RPCError`.
        public static let unknown = Code(2)
        /// The client sent an argument that is invalid whatever the state of the system.
        public static let invalidArgument = Code(3)
        /// The deadline passed before the RPC completed.
        public static let deadlineExceeded = Code(4)
        /// A requested entity, such as a record or file, does not exist.
        public static let notFound = Code(5)
        /// An entity the client tried to create already exists.
        public static let alreadyExists = Code(6)
        /// The caller is known but not allowed to do this; use `unauthenticated` when the caller is not known.
        public static let permissionDenied = Code(7)
        /// A resource ran out: a quota, a message size limit, or room on the server.
        public static let resourceExhausted = Code(8)
        /// The system is not in the state the operation needs; the client should not retry until the state changes.
        public static let failedPrecondition = Code(9)
        /// The operation was aborted, typically by a concurrency conflict such as a failed transaction; retry at a higher level.
        public static let aborted = Code(10)
        /// The operation went past a valid range, such as reading past the end of a file.
        public static let outOfRange = Code(11)
        /// The server does not implement or support this method or operation.
        public static let unimplemented = Code(12)
        /// An invariant the system relies on was broken; a serious error on the peer's side.
        public static let `internal` = Code(13)
        /// The service is unavailable for now, such as when no connection can be made; usually safe to retry with backoff.
        public static let unavailable = Code(14)
        /// Data was lost or corrupted beyond recovery.
        public static let dataLoss = Code(15)
        /// The request has no valid credentials for the operation.
        public static let unauthenticated = Code(16)

        static let names = [
            "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
            "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
            "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
            "UNAUTHENTICATED",
        ]

        /// The code's name as gRPC spells it, such as `NOT_FOUND`.
        public var description: String { Self.names[rawValue] }
    }

    /// Whether the RPC succeeded, and if not, the kind of failure.
    public var code: Code
    /// A human-readable explanation sent in `grpc-message`; empty when there is none.
    public var message: String

    /// Creates a status with a code and an optional message (empty by default).
    public init(code: Code, message: String = "") {
        self.code = code
        self.message = message
    }

    /// The status of a successful RPC, with no message.
    public static let ok = Status(code: .ok)

    /// The status as `CODE: message`, or just the code when the message is empty, for logs.
    public var description: String {
        message.isEmpty ? "\(code)" : "\(code): \(message)"
    }
}
