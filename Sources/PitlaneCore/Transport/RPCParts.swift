/// What a client sends on a stream: metadata once, then messages (serialized).
public enum RPCRequestPart: Sendable {
    /// The request metadata (headers); always the first part.
    case metadata(Metadata)
    /// One serialized request message and its flags.
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
    /// The response metadata (headers); omitted in a trailers-only response.
    case metadata(Metadata)
    /// One serialized response message and its flags.
    case message([UInt8], MessageFlags)
    /// The RPC's status and trailing metadata; always the last part.
    case status(Status, Metadata)

    /// The bytes the part accounts for in stream buffers: a message's size, or a flat 64 for metadata and status.
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
    /// The flags as bits.
    public let rawValue: UInt8

    /// Creates flags from their bits.
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
    /// The method the RPC calls.
    public let descriptor: MethodDescriptor
    /// The parts arriving from the peer; iteration throws if the stream fails.
    public let inbound: RPCAsyncSequence<Inbound, any Error>
    /// The writer for the parts going to the peer; finishing it ends this side of the stream.
    public let outbound: RPCWriter<Outbound>.Closable
    /// The transport's count of this stream's message bytes on the wire (after compression),
    /// which metrics report; nil when it keeps none, as in process, where messages are neither
    /// framed nor compressed and metrics count their serialized sizes.
    public let wireCounts: (any MessageWireCounts)?

    /// Creates a stream from its two directions and, if the transport keeps one, its count of wire bytes.
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

/// A stream as a client sees it: responses in, requests out.
public typealias ClientRPCStream = RPCStream<RPCResponsePart, RPCRequestPart>
/// A stream as a server sees it: requests in, responses out.
public typealias ServerRPCStream = RPCStream<RPCRequestPart, RPCResponsePart>
