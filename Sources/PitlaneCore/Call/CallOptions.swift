/// Per-call choices; unset values fall back to the method's service config.
///
/// ```swift
/// let response = try await kart.listRaces(request, options: .defaults.with { $0.timeout = .seconds(2) })
/// ```
public struct CallOptions: Sendable {
    /// How long the RPC may take before it fails with `.deadlineExceeded`. nil: no limit.
    public var timeout: Duration?
    /// Fail fast while the connection is down (false, the default) or wait for it (true).
    public var waitForReady: Bool?
    /// The largest request message the client sends, in bytes.
    public var maxRequestMessageBytes: Int?
    /// The largest response message the client accepts, in bytes.
    public var maxResponseMessageBytes: Int?
    /// How to compress request messages; nil for none.
    public var compression: CompressionAlgorithm?
    /// Per-message compression: set `compressesWrites` to send the next request messages
    /// uncompressed; read `lastReadWasCompressed` after a response message arrives.
    public var messageCompression: MessageCompressionControl?
    /// Retry or hedge; nil to use the service config's.
    public var executionPolicy: MethodConfig.ExecutionPolicy?
    /// The RPC's kind, which ``GRPCClient`` sets from the method it calls: transports whose
    /// protocol frames calls by kind (Connect sends unary calls as plain POSTs) read it.
    public var rpcKind = RPCKind.bidirectionalStreaming

    /// Creates options with nothing set, so the method's service config and the transport's defaults apply.
    public init() {}

    /// Options with nothing set, as a starting point for ``with(_:)``.
    public static var defaults: CallOptions { CallOptions() }

    /// A copy changed by `update`.
    public func with(_ update: (inout CallOptions) -> Void) -> CallOptions {
        var copy = self
        update(&copy)
        return copy
    }

    /// These options with the method config's values filling what is unset.
    func merged(with config: MethodConfig?) -> CallOptions {
        guard let config else { return self }
        var merged = self
        merged.timeout = timeout ?? config.timeout
        merged.waitForReady = waitForReady ?? config.waitForReady
        merged.maxRequestMessageBytes = maxRequestMessageBytes ?? config.maxRequestMessageBytes
        merged.maxResponseMessageBytes = maxResponseMessageBytes ?? config.maxResponseMessageBytes
        merged.executionPolicy = executionPolicy ?? config.executionPolicy
        return merged
    }
}

/// A message compression algorithm (`grpc-encoding`).
public struct CompressionAlgorithm: Sendable, Hashable, CustomStringConvertible {
    enum Base: String, Sendable { case identity, gzip, deflate }
    let base: Base

    /// No compression (`identity`).
    public static let none = CompressionAlgorithm(base: .identity)
    /// gzip compression.
    public static let gzip = CompressionAlgorithm(base: .gzip)
    /// zlib's deflate compression.
    public static let deflate = CompressionAlgorithm(base: .deflate)

    /// The `grpc-encoding` name.
    public var name: String { base.rawValue }

    /// The algorithm with this `grpc-encoding` name (`identity`, `gzip` or `deflate`); nil for any other.
    public init?(name: String) {
        guard let base = Base(rawValue: name) else { return nil }
        self.base = base
    }

    private init(base: Base) { self.base = base }

    /// The `grpc-encoding` name, for logs.
    public var description: String { name }
}
