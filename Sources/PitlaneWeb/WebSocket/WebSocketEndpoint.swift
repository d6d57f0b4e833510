/// WebSocket (RFC 6455) on the server's port, beside gRPC, gRPC-Web and Connect: an HTTP/1.1
/// `GET` with `Upgrade: websocket` whose path `route` accepts becomes a WebSocket connection,
/// and its handler runs as a task of the server, like an RPC's.
///
/// ```swift
/// var config = HTTP2ServerTransport.Config.defaults
/// config.webSocket = WebSocketEndpoint { path in
///     path == "/echo" ? { socket in
///         for try await message in socket.messages { try await socket.send(message) }
///     } : nil
/// }
/// ```
public struct WebSocketEndpoint: Sendable {
    /// Runs one WebSocket connection. When it returns the connection closes (1000, unless it
    /// was closed already); when the client closes or goes away, `messages` ends.
    public typealias Handler = @Sendable (WebSocket) async throws -> Void

    /// Frame, message, queue and time limits.
    public var limits: WebSocketLimits
    /// The handler for an upgrade request's path (with its query); nil answers 404.
    ///
    /// It runs on the connection's event loop before the 101 response is queued, so what
    /// must exist before the client may speak (a place in a chat room) can be set up here;
    /// keep it quick. The handler then runs, unless the server is shutting down.
    public var route: @Sendable (_ path: String) -> Handler?

    /// An endpoint that asks `route` for each upgrade request's handler, with `limits` (default ``WebSocketLimits/init()``).
    public init(limits: WebSocketLimits = WebSocketLimits(), route: @escaping @Sendable (_ path: String) -> Handler?) {
        self.limits = limits
        self.route = route
    }
}

/// The limits of WebSocket connections.
public struct WebSocketLimits: Sendable {
    /// The largest message (all of its fragments) a client may send, in bytes; a larger one
    /// closes the connection with 1009. Default 64 KiB.
    public var maxMessageBytes = 64 * 1024
    /// Received messages the handler has not read yet, in bytes, before the connection stops
    /// reading from the socket (TCP then holds the client back). Default 256 KiB.
    public var maxUnreadBytes = 256 * 1024
    /// Bytes queued for the client before `send` waits: a slow client holds its sender back,
    /// never the server's memory. Default 256 KiB.
    public var outboundHighWatermark = 256 * 1024
    /// A connection from which nothing arrives for this long is pinged; if nothing arrives
    /// for as long again, it is closed (1001). Default 30 s.
    public var idleTimeout: Duration = .seconds(30)
    /// How long a closing connection waits for the client's close frame. Default 2 s.
    public var closeTimeout: Duration = .seconds(2)

    /// The default limits: 64 KiB messages, 256 KiB unread and queued, 30 s idle, 2 s close timeout.
    public init() {}
}
