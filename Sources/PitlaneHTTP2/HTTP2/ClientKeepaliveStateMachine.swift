/// Client keepalive without I/O: every `time` the connection asks whether to ping; a ping
/// goes out while RPCs are open (or always, with `permitWithoutCalls`) unless one is already
/// unanswered, and an ACK missing when its timeout fires means the server is gone.
/// `HTTP2ClientConnection` arms the timers and carries out the actions.
struct ClientKeepaliveStateMachine {
    private enum State {
        /// No ping unanswered.
        case waiting
        /// A ping is out; its timeout runs.
        case awaitingAck
        /// The connection is gone; nothing more to do.
        case stopped
    }

    enum IntervalAction: Equatable {
        /// Send a PING and arm the ACK timeout; arm the next interval either way.
        case ping
        case none
    }

    let permitWithoutCalls: Bool
    private var state = State.waiting

    init(permitWithoutCalls: Bool) {
        self.permitWithoutCalls = permitWithoutCalls
    }

    /// The interval passed, with `openStreams` RPCs on the connection.
    mutating func intervalElapsed(openStreams: Int) -> IntervalAction {
        guard case .waiting = state, openStreams > 0 || permitWithoutCalls else { return .none }
        state = .awaitingAck
        return .ping
    }

    /// A PING ACK arrived; true when it answered our ping (disarm its timeout).
    mutating func ackReceived() -> Bool {
        guard case .awaitingAck = state else { return false }
        state = .waiting
        return true
    }

    /// The ACK timeout fired; true when the ping is still unanswered: close the connection.
    mutating func ackTimedOut() -> Bool {
        guard case .awaitingAck = state else { return false }
        state = .stopped
        return true
    }

    /// The connection closed.
    mutating func stop() {
        state = .stopped
    }
}
