import PitlaneHTTP2

/// How an HTTP/1.1 connection becomes a WebSocket connection: the transport puts the new
/// connection in the old one's place and starts it, then runs the handler as one of the
/// server's tasks.
struct WebSocketHandOff {
    private let accepted: AcceptedConnection

    init(_ accepted: AcceptedConnection) {
        self.accepted = accepted
    }

    /// `new` in `old`'s place, started (closed if it cannot start).
    func takeOver(_ old: any ServerConnection, _ new: WebSocketConnection) {
        accepted.replace(old, new)
        do {
            try new.start()
        } catch {
            new.close()
        }
    }

    /// Runs `handler` as a server task; false when the server takes no more work (it is
    /// shutting down).
    func run(_ connection: WebSocketConnection, _ handler: @escaping WebSocketEndpoint.Handler) -> Bool {
        let webSocket = connection.webSocket!
        let bound = LoopBound(connection, loop: connection.loop)
        return accepted.run(connection.loop) { await Self.serve(webSocket, bound, handler) }
    }

    /// Runs a WebSocket connection's handler; apart so that its frame is not part of every
    /// server task's.
    @inline(never)
    private static func serve(
        _ webSocket: WebSocket, _ connection: LoopBound<WebSocketConnection>,
        _ handler: WebSocketEndpoint.Handler
    ) async {
        let finished = (try? await handler(webSocket)) != nil
        connection.execute { $0.handlerEnded(failed: !finished) }
    }
}
