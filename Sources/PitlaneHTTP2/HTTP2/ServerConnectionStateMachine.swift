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
/// - **Closing without losing the last word**: once the final GOAWAY (or the error nghttp2
///   queued) is written, the connection stops writing and, for `lingerTime`, reads and
///   discards what the client still sends, then closes. A socket closed with unread bytes
///   answers with a reset, and a reset can destroy the GOAWAY before the client reads it.
/// - **Preface**: a client that has not sent its SETTINGS within `prefaceTimeout` is closed.
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
            minimumPingInterval = config.http2.minimumPingInterval
            maxPingStrikes = config.http2.maxPingStrikes
            maxStreamResetBurst = config.http2.maxStreamResetBurst
            streamResetsPerSecond = config.http2.streamResetsPerSecond
            maxConnectionIdle = config.connection.maxIdle
            maxConnectionAge = config.connection.maxAge
            maxConnectionAgeGrace = config.connection.maxAgeGrace
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
        /// Nothing more will be said: closes (lingering first) as soon as what is queued is written.
        case closingOnceWritten
        /// Everything is written and the write side shut down; reading and discarding until
        /// the client closes or `lingerTime` passes.
        case lingering
        /// The socket is closed.
        case closed
    }

    /// What the connection must do.
    enum Action: Equatable {
        case none
        /// Submit a GOAWAY with the largest stream id and a PING (the first drain step).
        case sendDrainNotice
        /// Submit the final GOAWAY: `errorCode` and `debug` say why. When the connection ends
        /// with it (`phase` is `closingOnceWritten`), the write that takes it out lingers.
        case sendGoAway(errorCode: UInt32, debug: String)
        /// Stop writing (TLS close_notify, then shutdown), read and discard, and arm the
        /// linger timer, whose end is ``lingerEnded()``.
        case linger
        /// Close the socket now (the machine is `closed` already); `lingered` when the
        /// connection lingered first (TLS close_notify is out).
        case close(lingered: Bool)
    }

    /// What to do with a new stream.
    enum StreamAdmission: Equatable {
        case accept
        /// The final GOAWAY is out: RST_STREAM REFUSED_STREAM, so the client may retry elsewhere.
        case refuse
    }

    /// How long a closing connection reads and discards before it closes.
    static let lingerTime: Duration = .seconds(2)

    let limits: Limits
    private(set) var phase = Phase.active
    /// The client's preface (its first SETTINGS) arrived.
    private(set) var prefaceReceived = false
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

    /// Whether the session still runs: frames are read from and written to the client.
    var isExchangingFrames: Bool {
        switch phase {
        case .active, .drainNoticeSent, .draining, .closingOnceWritten: true
        case .lingering, .closed: false
        }
    }

    // MARK: Preface

    /// The client's first SETTINGS arrived.
    mutating func settingsReceived() {
        prefaceReceived = true
    }

    /// `prefaceTimeout` passed since the connection opened.
    mutating func prefaceTimeoutPassed() -> Action {
        guard !prefaceReceived, phase != .closed else { return .none }
        phase = .closed
        return .close(lingered: false)
    }

    // MARK: Streams

    mutating func streamOpened() -> StreamAdmission {
        switch phase {
        case .active, .drainNoticeSent:
            openStreams += 1
            idleSince = nil
            pingStrikes = 0
            return .accept
        case .draining, .closingOnceWritten, .lingering, .closed:
            return .refuse
        }
    }

    /// A stream that was accepted ended. When it was the last one of a draining connection,
    /// the connection closes once the stream's last frames are written.
    mutating func streamClosed(at now: ContinuousClock.Instant) {
        openStreams = max(0, openStreams - 1)
        guard openStreams == 0 else { return }
        idleSince = now
        if phase == .draining { phase = .closingOnceWritten }
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
        guard isExchangingFrames, phase != .closingOnceWritten else { return .none }
        phase = .closingOnceWritten
        return .sendGoAway(errorCode: NGHTTP2_ENHANCE_YOUR_CALM.rawValue, debug: debug)
    }

    /// The client broke the protocol (nghttp2 queued a GOAWAY that says why) or TLS failed (an
    /// alert is queued): nothing more is read into the session; close once that is written.
    mutating func protocolFailed() {
        guard isExchangingFrames else { return }
        phase = .closingOnceWritten
    }

    // MARK: Closing

    /// Everything queued is written. `sessionWantsIO` is nghttp2's word on whether the session
    /// goes on (false once it sent a GOAWAY for an error, or both sides went away).
    mutating func outputWritten(sessionWantsIO: Bool) -> Action {
        guard isExchangingFrames else { return .none }
        guard phase == .closingOnceWritten || !sessionWantsIO else { return .none }
        phase = .lingering
        return .linger
    }

    /// The linger timer fired, or the client closed its side while the connection lingered.
    mutating func lingerEnded() -> Action {
        guard phase == .lingering else { return .none }
        phase = .closed
        return .close(lingered: true)
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
        phase = openStreams == 0 ? .closingOnceWritten : .draining
        return .sendGoAway(errorCode: NGHTTP2_NO_ERROR.rawValue, debug: "")
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
        guard isExchangingFrames else { return .none }
        phase = .closed
        return .close(lingered: false)
    }

    /// The socket closed or failed, or the connection was closed.
    mutating func closed() {
        phase = .closed
    }
}
