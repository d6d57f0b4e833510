/// A client connection's lifecycle, apart from its I/O: connecting, the TLS handshake and the
/// wait for the server's SETTINGS, ready, draining after a GOAWAY, closed. Each event returns
/// what the connection must do; ``HTTP2ClientConnection`` carries it out. Unit-tested without
/// sockets (`ClientConnectionStateMachineTests`).
struct ClientConnectionStateMachine {
    enum Phase: Equatable {
        case connecting
        /// TLS: connected; the handshake runs, then the client waits for the server's
        /// SETTINGS, the first sign that the server accepted it (with TLS 1.3 a server
        /// rejects a client certificate only after the client's handshake is done).
        case handshaking
        case ready
        /// GOAWAY received or sent: open streams finish, no new ones.
        case draining
        case closed
    }

    enum Action: Equatable {
        case none
        /// Run the TLS handshake (reading produces the ClientHello) under its timeout.
        case beginHandshake
        /// Queue the client's preface and SETTINGS (the first bytes of HTTP/2).
        case startSession
        /// Queue the preface if `startSession`, then report the connection usable, arm
        /// keepalive and flush.
        case becomeReady(startSession: Bool)
        /// Send GOAWAY and stop taking streams; close once the last one ends.
        case sendGoAway
        /// Stop taking streams: the server said GOAWAY.
        case stopTakingStreams
    }

    private(set) var phase = Phase.connecting

    /// New streams may start.
    var takesStreams: Bool { phase == .ready }

    /// Whether the session's bytes may be written (not before the socket connects).
    var writes: Bool { phase != .connecting && phase != .closed }

    /// The TCP connect finished.
    mutating func socketConnected(secure: Bool) -> Action {
        guard phase == .connecting else { return .none }
        if secure {
            phase = .handshaking
            return .beginHandshake
        }
        phase = .ready
        return .becomeReady(startSession: true)
    }

    /// TLS: the handshake completed; the preface goes out, and readiness waits for SETTINGS.
    mutating func handshakeCompleted() -> Action {
        phase == .handshaking ? .startSession : .none
    }

    /// The server's SETTINGS arrived.
    mutating func settingsReceived() -> Action {
        guard phase == .handshaking else { return .none }
        phase = .ready
        return .becomeReady(startSession: false)
    }

    /// The server sent GOAWAY: no new streams, whatever the phase (one that arrives before
    /// the connection was ready means it never will be; it closes once written out).
    mutating func goAwayReceived() -> Action {
        guard phase != .closed else { return .none }
        phase = .draining
        return .stopTakingStreams
    }

    /// The transport drains this connection (shutdown, or it is no longer wanted).
    mutating func drainRequested() -> Action {
        guard phase == .ready else { return .none }
        phase = .draining
        return .sendGoAway
    }

    /// After a write: whether the connection is done (the session ended, or a drain finished
    /// with every stream closed and every byte written).
    func isFinished(sessionActive: Bool, openStreams: Int, unsentBytes: Bool) -> Bool {
        !sessionActive || (phase == .draining && openStreams == 0 && !unsentBytes)
    }

    /// The connection closes; false when it was closed already.
    mutating func close() -> Bool {
        guard phase != .closed else { return false }
        phase = .closed
        return true
    }

    /// What the connect timer finds: whether the connect is still pending.
    var isConnecting: Bool { phase == .connecting }

    /// What the handshake timer finds: whether the handshake (or the SETTINGS after it) is pending.
    var isHandshaking: Bool { phase == .handshaking }

    /// Keepalive pings run on a connection that is ready or draining.
    var pings: Bool { phase == .ready || phase == .draining }
}
