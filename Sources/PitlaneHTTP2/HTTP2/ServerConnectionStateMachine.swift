import CNGHTTP2

/// The policy of one server connection, without I/O: which streams it takes, when it goes
/// away and why, and when it closes. `HTTP2ServerConnection` feeds it events with the time
/// they happened and carries out the actions it returns; tests drive it with instants of
/// their choosing.
///
/// - **Ping policy** (gRPC's keepalive enforcement): a client may ping at most once per
///   `minimumPingInterval`; the strikes it earns past that are forgiven whenever the server
///   sends headers or data, and more than `maxPingStrikes` end the connection with GOAWAY
///   ENHANCE_YOUR_CALM "too_many_pings".
/// - **Rapid reset** (CVE-2023-44487): each RST_STREAM from the client spends one of a budget
///   of `maxStreamResetBurst` that refills at `streamResetsPerSecond`; spent out, GOAWAY
///   ENHANCE_YOUR_CALM "too_many_resets".
/// - **Idle and age**: no stream for `maxConnectionIdle`, or open for `maxConnectionAge`,
///   starts a graceful drain; `maxConnectionAgeGrace` after the age drain, it closes whatever
///   is open.
/// - **Graceful drain in two steps**, as gRPC servers do: first a GOAWAY with the largest
///   stream id and a PING, so streams the client sent meanwhile are still taken; on the PING's
///   ACK the final GOAWAY names the last stream taken. The connection closes when its last
///   stream ends.
/// - A misbehaving client's GOAWAY is final at once, and the connection closes once it is out.
struct ServerConnectionStateMachine {
    struct Limits {
        var minimumPingInterval: Duration
        var maxPingStrikes: Int
        var maxStreamResetBurst: Int
        var streamResetsPerSecond: Int
        var maxConnectionIdle: Duration?
        var maxConnectionAge: Duration?
        var maxConnectionAgeGrace: Duration

        init(_ config: HTTP2ServerTransport.Config) {
            minimumPingInterval = config.minimumPingInterval
            maxPingStrikes = config.maxPingStrikes
            maxStreamResetBurst = config.maxStreamResetBurst
            streamResetsPerSecond = config.streamResetsPerSecond
            maxConnectionIdle = config.maxConnectionIdle
            maxConnectionAge = config.maxConnectionAge
            maxConnectionAgeGrace = config.maxConnectionAgeGrace
        }
    }

    /// Where the connection is in its life.
    enum Phase: Equatable {
        /// Taking streams.
        case active
        /// The first GOAWAY (largest stream id) and its PING are out; streams are still taken.
        case drainNoticeSent
        /// The final GOAWAY is out: no new streams; closes when the last stream ends.
        case draining
        /// Gone: the socket is closed, or closes as soon as what is queued is written.
        case closed
    }

    /// What the connection must do.
    enum Action: Equatable {
        case none
        /// Submit a GOAWAY with the largest stream id and a PING (the first drain step).
        case sendDrainNotice
        /// Submit the final GOAWAY: `errorCode` and `debug` say why; `closeOnceWritten` when
        /// the client misbehaved and the connection ends as soon as the GOAWAY is out.
        case sendGoAway(errorCode: UInt32, debug: String, closeOnceWritten: Bool)
        /// Close the connection now.
        case close
    }

    /// What to do with a new stream.
    enum StreamAdmission: Equatable {
        case accept
        /// The final GOAWAY is out: RST_STREAM REFUSED_STREAM, so the client may retry elsewhere.
        case refuse
    }

    let limits: Limits
    private(set) var phase = Phase.active
    private var openStreams = 0
    private var idleSince: ContinuousClock.Instant?
    private var lastPing: ContinuousClock.Instant?
    private var pingStrikes = 0
    private var resetBudget: Double
    private var resetBudgetCheckedAt: ContinuousClock.Instant

    init(limits: Limits, now: ContinuousClock.Instant) {
        self.limits = limits
        idleSince = now
        resetBudget = Double(limits.maxStreamResetBurst)
        resetBudgetCheckedAt = now
    }

    /// Whether a graceful drain has begun (the notice or the final GOAWAY is out).
    var isDraining: Bool { phase == .drainNoticeSent || phase == .draining }

    // MARK: Streams

    mutating func streamOpened() -> StreamAdmission {
        switch phase {
        case .active, .drainNoticeSent:
            openStreams += 1
            idleSince = nil
            pingStrikes = 0
            return .accept
        case .draining, .closed:
            return .refuse
        }
    }

    /// A stream that was accepted ended. Returns `.close` when it was the last one of a
    /// draining connection.
    mutating func streamClosed(at now: ContinuousClock.Instant) -> Action {
        openStreams = max(0, openStreams - 1)
        guard openStreams == 0 else { return .none }
        idleSince = now
        return phase == .draining ? .close : .none
    }

    /// The server sent headers or data: a client measuring a busy connection (BDP pings) is
    /// not abusing it.
    mutating func framesSent() {
        lastPing = nil
        pingStrikes = 0
    }

    // MARK: Misbehaviour

    mutating func pingReceived(at now: ContinuousClock.Instant) -> Action {
        defer { lastPing = now }
        guard let last = lastPing, now - last < limits.minimumPingInterval else { return .none }
        pingStrikes += 1
        guard pingStrikes > limits.maxPingStrikes else { return .none }
        return goAwayAndClose(debug: "too_many_pings")
    }

    mutating func resetReceived(at now: ContinuousClock.Instant) -> Action {
        let refill = (now - resetBudgetCheckedAt) / .seconds(1)
        resetBudget = min(Double(limits.maxStreamResetBurst), resetBudget + refill * Double(limits.streamResetsPerSecond)) - 1
        resetBudgetCheckedAt = now
        guard resetBudget < 0 else { return .none }
        return goAwayAndClose(debug: "too_many_resets")
    }

    private mutating func goAwayAndClose(debug: String) -> Action {
        guard phase != .closed else { return .none }
        phase = .closed
        return .sendGoAway(errorCode: NGHTTP2_ENHANCE_YOUR_CALM.rawValue, debug: debug, closeOnceWritten: true)
    }

    // MARK: Going away

    /// Starts a graceful drain (server shutdown, idle, age); nothing if one is under way.
    mutating func beginDrain() -> Action {
        guard phase == .active else { return .none }
        phase = .drainNoticeSent
        return .sendDrainNotice
    }

    /// The drain notice's PING came back (or did not within the connection's patience): the
    /// client has seen the notice, so every stream it sent before is in; the final GOAWAY
    /// names the last one.
    mutating func drainNoticeAcknowledged() -> Action {
        guard phase == .drainNoticeSent else { return .none }
        phase = .draining
        if openStreams == 0 {
            return .sendGoAway(errorCode: NGHTTP2_NO_ERROR.rawValue, debug: "", closeOnceWritten: true)
        }
        return .sendGoAway(errorCode: NGHTTP2_NO_ERROR.rawValue, debug: "", closeOnceWritten: false)
    }

    /// The idle check's timer fired: drain when the connection has been without streams for
    /// `maxConnectionIdle`, else when to check again (nil: a stream is open; its end re-arms).
    mutating func idleCheck(at now: ContinuousClock.Instant) -> (Action, checkAgainAfter: Duration?) {
        guard let idle = limits.maxConnectionIdle, phase == .active else { return (.none, nil) }
        guard let since = idleSince else { return (.none, nil) }
        let idleFor = now - since
        if idleFor >= idle { return (beginDrain(), nil) }
        return (.none, idle - idleFor)
    }

    /// `maxConnectionAge` passed: drain; the grace timer then ends it.
    mutating func ageReached() -> Action {
        beginDrain()
    }

    /// `maxConnectionAgeGrace` passed after the age drain: close whatever is open.
    mutating func ageGraceEnded() -> Action {
        guard phase != .closed else { return .none }
        phase = .closed
        return .close
    }

    /// The socket closed or failed, or the connection was closed.
    mutating func closed() {
        phase = .closed
    }
}
