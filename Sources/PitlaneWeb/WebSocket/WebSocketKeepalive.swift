/// When a quiet WebSocket connection is pinged and when it is given up, without I/O: the
/// connection's timer fires every ``WebSocketLimits/idleTimeout`` and does what this says.
/// A connection from which nothing arrived for a whole interval is pinged; one that still
/// said nothing by the next is closed.
struct WebSocketKeepalive: Equatable {
    enum Action: Equatable {
        case none
        case ping
        case close
    }

    private var heardSinceCheck = true
    private var pingOutstanding = false

    /// A frame (data, ping, pong or close) began to arrive.
    mutating func frameReceived() {
        heardSinceCheck = true
        pingOutstanding = false
    }

    mutating func intervalElapsed() -> Action {
        if heardSinceCheck {
            heardSinceCheck = false
            return .none
        }
        if pingOutstanding { return .close }
        pingOutstanding = true
        return .ping
    }
}
