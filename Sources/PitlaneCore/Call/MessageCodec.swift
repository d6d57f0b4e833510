import PitlaneProtobuf

/// How a call's messages are written on the wire: Protocol Buffers' binary format (every
/// gRPC call, and Connect's `proto` codec) or its JSON mapping (Connect's `json` codec).
/// The transport says which one a request chose; the server picks the method's serializers
/// to match.
public enum MessageCodec: String, Sendable, Hashable {
    case protobuf = "proto"
    case json
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
