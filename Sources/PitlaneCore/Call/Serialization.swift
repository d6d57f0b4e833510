import PitlaneProtobuf

/// Turns messages into bytes for the transport.
public protocol MessageSerializer<Message>: Sendable {
    /// The type of the messages serialized.
    associatedtype Message
    /// Returns the bytes of `message`; throws if it cannot be serialized, which fails the RPC.
    func serialize(_ message: Message) throws -> [UInt8]

    /// The bytes of a message serialized once for many RPCs: its encoding if it is this
    /// serializer's, else the message serialized. By default, the message serialized.
    func serialize(_ message: SerializedMessage<Message>) throws -> [UInt8]
}

extension MessageSerializer {
    /// Serializes `message.message`, ignoring its binary encoding.
    public func serialize(_ message: SerializedMessage<Message>) throws -> [UInt8] {
        try serialize(message.message)
    }
}

/// Turns bytes from the transport into messages.
public protocol MessageDeserializer<Message>: Sendable {
    /// The type of the messages made.
    associatedtype Message
    /// Returns the message `bytes` encode; throws if they are not a valid message, which fails the RPC.
    func deserialize(_ bytes: [UInt8]) throws -> Message
}

/// Protocol Buffers binary format for generated messages.
public struct ProtobufSerializer<Message: PitlaneProtobuf.Message>: MessageSerializer {
    /// Creates a binary serializer.
    public init() {}

    /// Writes `message` in the binary format; throws an `.internal` error if it cannot be serialized.
    public func serialize(_ message: Message) throws -> [UInt8] {
        do {
            return try message.serializedBytes()
        } catch {
            throw RPCError(code: .internal, message: "cannot serialize \(Message.protoMessageName): \(error)")
        }
    }

    /// The binary encoding made once, as it is.
    public func serialize(_ message: SerializedMessage<Message>) throws -> [UInt8] {
        try message.binary ?? serialize(message.message)
    }
}

/// Protocol Buffers binary format for generated messages; bad bytes are `.internal` errors
/// naming what is wrong (a server turns them into `.invalidArgument` for requests).
public struct ProtobufDeserializer<Message: PitlaneProtobuf.Message>: MessageDeserializer {
    /// Creates a binary deserializer.
    public init() {}

    /// Reads a message from the binary format; throws an `.internal` error if the bytes are not a valid `Message`.
    public func deserialize(_ bytes: [UInt8]) throws -> Message {
        do {
            return try Message(serializedBytes: bytes)
        } catch {
            throw RPCError(code: .internal, message: "cannot deserialize \(Message.protoMessageName): \(error)")
        }
    }
}
