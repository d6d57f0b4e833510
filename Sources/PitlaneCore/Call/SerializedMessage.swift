import PitlaneProtobuf

/// A message serialized once in the binary format, to be written to many RPCs: a race tick
/// broadcast to every follower, say. A writer whose RPC speaks the binary codec sends
/// `binary` as it is, the same buffer for every RPC; one speaking another codec (Connect's
/// JSON) serializes `message` itself.
public struct SerializedMessage<Message> {
    /// The message, for writers whose codec is not the binary format.
    public let message: Message
    /// The binary encoding; nil when it failed, and each writer then serializes `message`
    /// itself and fails its own RPC with the error.
    public let binary: [UInt8]?

    /// Pairs a message with its binary encoding, or nil if encoding failed.
    public init(message: Message, binary: [UInt8]?) {
        self.message = message
        self.binary = binary
    }
}

extension SerializedMessage: Sendable where Message: Sendable {}

extension SerializedMessage where Message: PitlaneProtobuf.Message {
    /// `message` with its binary encoding, made now.
    public init(_ message: Message) {
        self.init(message: message, binary: try? message.serializedBytes())
    }
}
