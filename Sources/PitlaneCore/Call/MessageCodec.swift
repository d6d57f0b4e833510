import PitlaneProtobuf

/// How a call's messages are written on the wire: Protocol Buffers' binary format (every
/// gRPC call, and Connect's `proto` codec) or its JSON mapping (Connect's `json` codec).
/// The transport says which one a request chose; the server picks the method's serializers
/// to match.
public enum MessageCodec: String, Sendable, Hashable {
    /// The Protocol Buffers binary format, named `proto` as Connect's content types spell it.
    case protobuf = "proto"
    /// The Protocol Buffers JSON mapping, named `json`.
    case json
}

/// Whether each side of an RPC sends one message or a stream of them.
public enum RPCKind: Sendable, Hashable {
    /// One request message, one response message.
    case unary
    /// A stream of request messages, one response message.
    case clientStreaming
    /// One request message, a stream of response messages.
    case serverStreaming
    /// Streams of messages both ways, at the same time.
    case bidirectionalStreaming
}

/// A method's `option idempotency_level` (google.protobuf.MethodOptions): Connect serves a
/// `NO_SIDE_EFFECTS` method over HTTP GET as well as POST, so its responses can be cached.
public enum IdempotencyLevel: Sendable, Hashable {
    /// No idempotency level declared (`IDEMPOTENCY_UNKNOWN`, the default).
    case unknown
    /// The method changes nothing (`NO_SIDE_EFFECTS`), so Connect may serve it over GET.
    case noSideEffects
    /// Calling the method again has the same effect as calling it once (`IDEMPOTENT`).
    case idempotent
}

/// Protocol Buffers' JSON mapping for generated messages.
public struct JSONSerializer<Message: PitlaneProtobuf.Message>: MessageSerializer {
    /// Creates a JSON serializer.
    public init() {}

    /// Writes `message` as UTF-8 JSON; throws an `.internal` error if it cannot be written.
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
    /// Creates a JSON deserializer.
    public init() {}

    /// Reads a message from UTF-8 JSON; throws an `.invalidArgument` error if the JSON is not a valid `Message`.
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
    /// The codec messages are written in.
    public let codec: MessageCodec

    /// Creates a serializer that writes messages in `codec`.
    public init(_ codec: MessageCodec) {
        self.codec = codec
    }

    /// Writes `message` in the codec; throws an `RPCError` if it cannot be written.
    public func serialize(_ message: Message) throws -> [UInt8] {
        codec == .json ? try JSONSerializer<Message>().serialize(message) : try ProtobufSerializer<Message>().serialize(message)
    }
}

/// The deserializing half of ``CodecSerializer``.
public struct CodecDeserializer<Message: PitlaneProtobuf.Message>: MessageDeserializer {
    /// The codec messages are read from.
    public let codec: MessageCodec

    /// Creates a deserializer that reads messages in `codec`.
    public init(_ codec: MessageCodec) {
        self.codec = codec
    }

    /// Reads a message in the codec; throws an `RPCError` if the bytes are not a valid `Message`.
    public func deserialize(_ bytes: [UInt8]) throws -> Message {
        codec == .json ? try JSONDeserializer<Message>().deserialize(bytes) : try ProtobufDeserializer<Message>().deserialize(bytes)
    }
}
