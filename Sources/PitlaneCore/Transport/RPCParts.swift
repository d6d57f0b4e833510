/// What a client sends on a stream: metadata once, then messages (serialized).
public enum RPCRequestPart: Sendable {
    case metadata(Metadata)
    case message([UInt8], MessageFlags)

    /// The bytes the part accounts for in stream buffers.
    public var byteCount: Int {
        switch self {
        case .metadata: 64
        case .message(let bytes, _): bytes.count
        }
    }
}

/// What a server sends: metadata (optional: a status alone is a trailers-only response),
/// messages, then the status with trailing metadata.
public enum RPCResponsePart: Sendable {
    case metadata(Metadata)
    case message([UInt8], MessageFlags)
    case status(Status, Metadata)

    public var byteCount: Int {
        switch self {
        case .metadata, .status: 64
        case .message(let bytes, _): bytes.count
        }
    }
}

/// What travels beside one message's bytes between the RPC machinery and a transport, like
/// gRPC's per-message write flags. Each flag has a meaning in one direction only.
public struct MessageFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Sent: leave this message uncompressed even when the RPC compresses its messages.
    public static let noCompression = MessageFlags(rawValue: 1 << 0)
    /// Received: the message arrived compressed (its compressed-flag byte was set).
    public static let compressed = MessageFlags(rawValue: 1 << 1)
}

/// One RPC's two directions, as a transport hands them over.
public struct RPCStream<Inbound: Sendable, Outbound: Sendable>: Sendable {
    public let descriptor: MethodDescriptor
    public let inbound: RPCAsyncSequence<Inbound, any Error>
    public let outbound: RPCWriter<Outbound>.Closable
    /// The transport's count of this stream's message bytes on the wire (after compression),
    /// which metrics report; nil when it keeps none, as in process, where messages are neither
    /// framed nor compressed and metrics count their serialized sizes.
    public let wireCounts: (any MessageWireCounts)?

    public init(
        descriptor: MethodDescriptor, inbound: RPCAsyncSequence<Inbound, any Error>,
        outbound: RPCWriter<Outbound>.Closable, wireCounts: (any MessageWireCounts)? = nil
    ) {
        self.descriptor = descriptor
        self.inbound = inbound
        self.outbound = outbound
        self.wireCounts = wireCounts
    }
}

public typealias ClientRPCStream = RPCStream<RPCResponsePart, RPCRequestPart>
public typealias ServerRPCStream = RPCStream<RPCRequestPart, RPCResponsePart>
