import PitlaneProtobuf

/// How a call's messages are written on the wire: Protocol Buffers' binary format (every
/// gRPC call, and Connect's `proto` codec) or its JSON mapping (Connect's `json` codec).
/// The transport says which one a request chose; the server picks the method's serializers
/// to match.
public enum MessageCodec: String, Sendable, Hashable {
    case protobuf = "proto"
    case json
}

/// Whether each side of an RPC sends one message or a stream of them.
public enum RPCKind: Sendable, Hashable {
    case unary
    case clientStreaming
    case serverStreaming
    case bidirectionalStreaming
}

/// A method's `option idempotency_level` (google.protobuf.MethodOptions): Connect serves a
/// `NO_SIDE_EFFECTS` method over HTTP GET as well as POST, so its responses can be cached.
public enum IdempotencyLevel: Sendable, Hashable {
    case unknown
    case noSideEffects
    case idempotent
}

/// Protocol Buffers' JSON mapping for generated messages.
public struct JSONSerializer<Message: PitlaneProtobuf.Message>: MessageSerializer {
    public init() {}

    public func serialize(_ message: Message) throws -> [UInt8] {
        do {
            return try message.jsonUTF8Bytes()
        } catch {
            throw RPCError(code: .internal, message: "cannot write \(Message.protoMessageName) as JSON: \(error)")
        }
    }
}

/// Protocol Buffers' JSON mapping for generated messages; bad JSON is an
/// `.invalidArgument` error naming what is wrong.
public struct JSONDeserializer<Message: PitlaneProtobuf.Message>: MessageDeserializer {
    public init() {}

    public func deserialize(_ bytes: [UInt8]) throws -> Message {
        do {
            return try Message(jsonUTF8Bytes: bytes)
        } catch {
            throw RPCError(code: .invalidArgument, message: "cannot read \(Message.protoMessageName) from JSON: \(error)")
        }
    }
}

/// Generated messages in the codec the client's transport speaks: binary, or JSON (a
/// Connect transport configured for it). Generated clients use it.
public struct CodecSerializer<Message: PitlaneProtobuf.Message>: MessageSerializer {
    public let codec: MessageCodec

    public init(_ codec: MessageCodec) {
        self.codec = codec
    }

    public func serialize(_ message: Message) throws -> [UInt8] {
        codec == .json ? try JSONSerializer<Message>().serialize(message) : try ProtobufSerializer<Message>().serialize(message)
    }
}

/// The deserializing half of ``CodecSerializer``.
public struct CodecDeserializer<Message: PitlaneProtobuf.Message>: MessageDeserializer {
    public let codec: MessageCodec

    public init(_ codec: MessageCodec) {
        self.codec = codec
    }

    public func deserialize(_ bytes: [UInt8]) throws -> Message {
        codec == .json ? try JSONDeserializer<Message>().deserialize(bytes) : try ProtobufDeserializer<Message>().deserialize(bytes)
    }
}
