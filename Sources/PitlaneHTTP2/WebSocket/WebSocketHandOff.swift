/// How an HTTP/1.1 connection becomes a WebSocket connection: the transport puts the new
/// connection in the old one's place and starts it, then runs the handler as one of the
/// server's tasks.
struct WebSocketHandOff {
    let takeOver: (_ old: any ServerConnection, _ new: WebSocketConnection) -> Void
    /// false when the server takes no more work (it is shutting down).
    let run: (_ connection: WebSocketConnection, _ handler: @escaping WebSocketEndpoint.Handler) -> Bool
}
