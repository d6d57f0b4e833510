/// An RPC that ended with a status other than OK.
///
/// Handlers throw it to choose the status the client sees; anything else a handler throws
/// becomes `.unknown` without its details. Clients receive it from every failed call.
///
/// ```swift
/// throw RPCError(code: .notFound, message: "no race named \(name)")
/// ```
public struct RPCError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Status codes other than OK.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let status: Status.Code

        /// nil for OK, which is not an error.
        public init?(_ status: Status.Code) {
            guard status != .ok else { return nil }
            self.status = status
        }

        private init(unchecked status: Status.Code) { self.status = status }

        public static let cancelled = Code(unchecked: .cancelled)
        public static let unknown = Code(unchecked: .unknown)
        public static let invalidArgument = Code(unchecked: .invalidArgument)
        public static let deadlineExceeded = Code(unchecked: .deadlineExceeded)
        public static let notFound = Code(unchecked: .notFound)
        public static let alreadyExists = Code(unchecked: .alreadyExists)
        public static let permissionDenied = Code(unchecked: .permissionDenied)
        public static let resourceExhausted = Code(unchecked: .resourceExhausted)
        public static let failedPrecondition = Code(unchecked: .failedPrecondition)
        public static let aborted = Code(unchecked: .aborted)
        public static let outOfRange = Code(unchecked: .outOfRange)
        public static let unimplemented = Code(unchecked: .unimplemented)
        public static let `internal` = Code(unchecked: .internal)
        public static let unavailable = Code(unchecked: .unavailable)
        public static let dataLoss = Code(unchecked: .dataLoss)
        public static let unauthenticated = Code(unchecked: .unauthenticated)

        public var description: String { status.description }
    }

    public var code: Code
    public var message: String
    /// Trailing metadata sent with the status.
    public var metadata: Metadata

    public init(code: Code, message: String, metadata: Metadata = [:]) {
        self.code = code
        self.message = message
        self.metadata = metadata
    }

    /// The error a non-OK status stands for; nil for OK.
    public init?(status: Status, metadata: Metadata = [:]) {
        guard let code = Code(status.code) else { return nil }
        self.init(code: code, message: status.message, metadata: metadata)
    }

    public var status: Status { Status(code: code.status, message: message) }

    public var description: String {
        message.isEmpty ? "\(code)" : "\(code): \(message)"
    }

    /// The status and trailing metadata of an RPC that ends with this error.
    @usableFromInline var statusAndMetadata: (Status, Metadata) { (status, metadata) }

    /// The status and trailing metadata of an RPC that ends with `error` (as ``from(_:unknownMessage:)``
    /// reports it). Not inlined: its temporaries would take room in the async frame it is
    /// called from.
    @usableFromInline @inline(never)
    static func statusAndMetadata(of error: any Error) -> (Status, Metadata) {
        from(error).statusAndMetadata
    }

    /// The error to report for anything a handler or transport throws: RPC errors as they
    /// are, errors that know their RPC form (`RPCErrorConvertible`) as that, cancellation as
    /// `.cancelled`, everything else as `.unknown` without details (they may hold internals
    /// the peer should not see).
    @usableFromInline package static func from(_ error: any Error, unknownMessage: String = "the handler failed") -> RPCError {
        switch error {
        case let rpcError as RPCError: rpcError
        case let convertible as any RPCErrorConvertible: convertible.rpcError
        case is CancellationError: RPCError(code: .cancelled, message: "the RPC was cancelled")
        default: RPCError(code: .unknown, message: unknownMessage)
        }
    }
}

/// An error that knows which status a caller should see: a library below the RPC layer (a
/// database client, say) conforms so a handler can let its errors through unchanged.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}
