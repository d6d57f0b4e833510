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
        /// The status code this error code stands for, never `.ok`.
        public let status: Status.Code

        /// nil for OK, which is not an error.
        public init?(_ status: Status.Code) {
            guard status != .ok else { return nil }
            self.status = status
        }

        private init(unchecked status: Status.Code) { self.status = status }

        /// The RPC was cancelled, usually by the caller.
        public static let cancelled = Code(unchecked: .cancelled)
        /// An error with no better code, such as one a handler threw that is not an `RPCError`.
        public static let unknown = Code(unchecked: .unknown)
        /// The client sent an argument that is invalid whatever the state of the system.
        public static let invalidArgument = Code(unchecked: .invalidArgument)
        /// The deadline passed before the RPC completed.
        public static let deadlineExceeded = Code(unchecked: .deadlineExceeded)
        /// A requested entity, such as a record or file, does not exist.
        public static let notFound = Code(unchecked: .notFound)
        /// An entity the client tried to create already exists.
        public static let alreadyExists = Code(unchecked: .alreadyExists)
        /// The caller is known but not allowed to do this; use `unauthenticated` when the caller is not known.
        public static let permissionDenied = Code(unchecked: .permissionDenied)
        /// A resource ran out: a quota, a message size limit, or room on the server.
        public static let resourceExhausted = Code(unchecked: .resourceExhausted)
        /// The system is not in the state the operation needs; the client should not retry until the state changes.
        public static let failedPrecondition = Code(unchecked: .failedPrecondition)
        /// The operation was aborted, typically by a concurrency conflict such as a failed transaction; retry at a higher level.
        public static let aborted = Code(unchecked: .aborted)
        /// The operation went past a valid range, such as reading past the end of a file.
        public static let outOfRange = Code(unchecked: .outOfRange)
        /// The server does not implement or support this method or operation.
        public static let unimplemented = Code(unchecked: .unimplemented)
        /// An invariant the system relies on was broken; a serious error on the peer's side.
        public static let `internal` = Code(unchecked: .internal)
        /// The service is unavailable for now, such as when no connection can be made; usually safe to retry with backoff.
        public static let unavailable = Code(unchecked: .unavailable)
        /// Data was lost or corrupted beyond recovery.
        public static let dataLoss = Code(unchecked: .dataLoss)
        /// The request has no valid credentials for the operation.
        public static let unauthenticated = Code(unchecked: .unauthenticated)

        /// The code's name as gRPC spells it, such as `NOT_FOUND`.
        public var description: String { status.description }
    }

    /// The kind of failure, sent as `grpc-status`.
    public var code: Code
    /// A human-readable explanation sent as `grpc-message`; may be empty.
    public var message: String
    /// Trailing metadata sent with the status.
    public var metadata: Metadata

    /// Creates an error with a code, a message, and optional trailing metadata (none by default).
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

    /// The error as a `Status`, with the same code and message.
    public var status: Status { Status(code: code.status, message: message) }

    /// The error as `CODE: message`, or just the code when the message is empty, for logs.
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
    /// The error the caller sees when this error ends an RPC.
    var rpcError: RPCError { get }
}
