import PitlaneCore

/// One accepted WebSocket connection, as its handler sees it: the messages the client sends,
/// and `send` and `close` towards it.
///
/// `send` waits while more than ``WebSocketLimits/outboundHighWatermark`` bytes are queued
/// for the client, so a slow client holds back its sender and never grows the server's
/// memory; a handler that must not wait (a broadcast) bounds its own queue and closes the
/// connection with ``WebSocketCloseCode/policyViolation`` when it overflows.
public final class WebSocket: Sendable {
    /// The request's path, with its query.
    public let path: String
    /// The client's address, such as `ipv4:127.0.0.1:51234`.
    public let peer: String
    /// The upgrade request's headers, names in lowercase.
    public let requestHeaders: [(name: String, value: String)]
    /// What the client sends, in order; ends when the client closes (cleanly: nil) or the
    /// connection fails (an error).
    public let messages: BufferedStream<WebSocketMessage>
    private let outbound: StreamOutbound
    private let connection: LoopBound<WebSocketConnection>

    init(
        path: String, peer: String, requestHeaders: [(name: String, value: String)], connection: LoopBound<WebSocketConnection>,
        messages: BufferedStream<WebSocketMessage>, outbound: StreamOutbound
    ) {
        self.path = path
        self.peer = peer
        self.requestHeaders = requestHeaders
        self.connection = connection
        self.messages = messages
        self.outbound = outbound
    }

    /// Queues `message` for the client; waits while the client is behind.
    /// - Throws: ``WebSocketClosed`` once the connection is closing or closed.
    public func send(_ message: WebSocketMessage) async throws {
        do {
            try await outbound.enqueue(message.byteCount) {
                connection.loop.execute { [connection] in connection.value.queue(message) }
            }
        } catch let error as RPCError {
            throw WebSocketClosed(reason: error.message)
        }
    }

    /// Queues `message` for the client if ``send(_:)`` would not wait; false, and nothing
    /// queued, when the client is ``WebSocketLimits/outboundHighWatermark`` bytes behind or the
    /// connection is closing. For a sender with no task to wait in (a room's broadcast, a
    /// `Mailbox` delivering to this socket): ``whenReady(_:)`` says when to try again.
    public func trySend(_ message: WebSocketMessage) -> Bool {
        guard outbound.tryEnqueue(message.byteCount, wireBytes: 0) else { return false }
        connection.loop.execute { [connection] in connection.value.queue(message) }
        return true
    }

    /// Runs `body` once on the connection's event loop when ``trySend(_:)`` would take a
    /// message again: soon if it would now, once the client has caught up otherwise; never if
    /// the connection closes first. Never from within this call, so `body` may take a lock
    /// its caller holds.
    public func whenReady(_ body: @escaping @Sendable () -> Void) {
        _ = outbound.whenReady(on: connection.loop, body)
    }

    /// ``send(_:)`` of a text message.
    public func send(text: String) async throws {
        try await send(.text(text))
    }

    /// Starts the close handshake with `code` and `reason` (at most 123 bytes of UTF-8);
    /// `messages` ends once the client answers, or after ``WebSocketLimits/closeTimeout``.
    public func close(_ code: WebSocketCloseCode = .normalClosure, reason: String = "") {
        connection.execute { $0.close(code, reason: reason) }
    }
}

/// The connection is closing or closed: nothing more can be sent.
public struct WebSocketClosed: Error, CustomStringConvertible {
    /// Why the connection is closed, such as `the connection was lost`.
    public var reason: String
    /// The connection is closed for `reason`.
    public init(reason: String) { self.reason = reason }
    /// The reason, prefixed with "the WebSocket connection is closed".
    public var description: String { "the WebSocket connection is closed: \(reason)" }
}
