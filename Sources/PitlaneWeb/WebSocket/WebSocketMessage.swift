/// One WebSocket message: text (valid UTF-8, checked on receipt) or binary.
public enum WebSocketMessage: Sendable, Equatable {
    /// A text message.
    case text(String)
    /// A binary message.
    case binary([UInt8])

    /// Bytes the message accounts for in queues.
    var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let bytes): bytes.count
        }
    }
}

/// A close frame's status code (RFC 6455 §7.4.1).
public struct WebSocketCloseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The code as sent in the close frame.
    public var rawValue: UInt16
    /// The close code `rawValue`; any value is accepted, including ones without a named constant.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection is fulfilled.
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the server is going down, or the client was idle too long.
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: the client broke the protocol.
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1007: a text message was not valid UTF-8.
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    /// 1008: the client broke the endpoint's policy (too slow to keep up, say).
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a message exceeded the limit.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1011: the server failed.
    public static let internalError = WebSocketCloseCode(rawValue: 1011)

    /// The numeric code, such as `1000`.
    public var description: String { String(rawValue) }
}
