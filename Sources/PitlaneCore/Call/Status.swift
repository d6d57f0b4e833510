/// The outcome of an RPC: a code and a message, as sent in `grpc-status` and `grpc-message`.
public struct Status: Sendable, Hashable, CustomStringConvertible {
    /// gRPC's status codes (doc/statuscodes.md), OK included.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The number on the wire, 0 to 16.
        public let rawValue: Int

        public init?(rawValue: Int) {
            guard (0...16).contains(rawValue) else { return nil }
            self.rawValue = rawValue
        }

        private init(_ rawValue: Int) { self.rawValue = rawValue }

        public static let ok = Code(0)
        public static let cancelled = Code(1)
        public static let unknown = Code(2)
        public static let invalidArgument = Code(3)
        public static let deadlineExceeded = Code(4)
        public static let notFound = Code(5)
        public static let alreadyExists = Code(6)
        public static let permissionDenied = Code(7)
        public static let resourceExhausted = Code(8)
        public static let failedPrecondition = Code(9)
        public static let aborted = Code(10)
        public static let outOfRange = Code(11)
        public static let unimplemented = Code(12)
        public static let `internal` = Code(13)
        public static let unavailable = Code(14)
        public static let dataLoss = Code(15)
        public static let unauthenticated = Code(16)

        static let names = [
            "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
            "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
            "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
            "UNAUTHENTICATED",
        ]

        public var description: String { Self.names[rawValue] }
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String = "") {
        self.code = code
        self.message = message
    }

    public static let ok = Status(code: .ok)

    public var description: String {
        message.isEmpty ? "\(code)" : "\(code): \(message)"
    }
}
