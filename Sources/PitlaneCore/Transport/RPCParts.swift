/// What a client sends on a stream: metadata once, then messages (serialized).
public enum RPCRequestPart: Sendable {
    case metadata(Metadata)
    case message([UInt8])

    /// The bytes the part accounts for in stream buffers.
    public var byteCount: Int {
        switch self {
        case .metadata: 64
        case .message(let bytes): bytes.count
        }
    }
}

/// What a server sends: metadata (optional: a status alone is a trailers-only response),
/// messages, then the status with trailing metadata.
public enum RPCResponsePart: Sendable {
    case metadata(Metadata)
    case message([UInt8])
    case status(Status, Metadata)

    public var byteCount: Int {
        switch self {
        case .metadata, .status: 64
        case .message(let bytes): bytes.count
        }
    }
}

/// One RPC's two directions, as a transport hands them over.
public struct RPCStream<Inbound: Sendable, Outbound: Sendable>: Sendable {
    public let descriptor: MethodDescriptor
    public let inbound: RPCAsyncSequence<Inbound, any Error>
    public let outbound: RPCWriter<Outbound>.Closable

    public init(descriptor: MethodDescriptor, inbound: RPCAsyncSequence<Inbound, any Error>,
                outbound: RPCWriter<Outbound>.Closable) {
        self.descriptor = descriptor
        self.inbound = inbound
        self.outbound = outbound
    }
}

public typealias ClientRPCStream = RPCStream<RPCResponsePart, RPCRequestPart>
public typealias ServerRPCStream = RPCStream<RPCRequestPart, RPCResponsePart>
