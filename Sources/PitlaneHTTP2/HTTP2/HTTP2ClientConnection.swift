import CNGHTTP2
import PitlaneCore
import Synchronization

/// One connection from a client to a server: socket, nghttp2 client session and streams,
/// all on one event loop.
///
/// `@unchecked Sendable`: every mutable property is used on `loop` only; client tasks reach
/// the connection solely through `loop.execute`.
final class HTTP2ClientConnection: HTTP2Connection, NGHTTP2SessionDelegate, @unchecked Sendable {
    let loop: EventLoop
    let authority: String
    let config: HTTP2ClientTransport.Config
    let socket: Socket
    let session: NGHTTP2Session
    /// Connecting, handshaking, ready, draining, closed; see ``ClientConnectionStateMachine``.
    private var lifecycle = ClientConnectionStateMachine()
    private var streams = StreamTable<ClientStream>()
    let pump: SessionPump
    /// Whether a flush may run now; see ``FlushGate``.
    let flushGate = FlushGate()
    /// Called once, on the loop, when the connection is ready or has failed.
    private var onConnect: ((Result<Void, RPCError>) -> Void)?
    private let onClose: @Sendable (HTTP2ClientConnection) -> Void
    /// Whether new streams may start here: set once connected, cleared for good by GOAWAY,
    /// drain or close. Read from any thread, so the transport never hands out a dead connection.
    private let usable = Atomic(false)
    var isUsable: Bool { usable.load(ordering: .acquiring) }
    /// The timer that drops the connection if our PING goes unanswered.
    private var pingTimeout: EventLoop.TimerID?
    /// The connect or handshake deadline, then the next keepalive ping. Timers hold the
    /// connection strongly and `close` cancels them: a weak reference would give it a side
    /// table, and every retain and release of it (several per message) would take the slow
    /// path.
    private var setupTimer: EventLoop.TimerID?
    private var keepaliveTimer: EventLoop.TimerID?
    /// Whether a keepalive ping is unanswered; see ``ClientKeepaliveStateMachine``.
    private var keepaliveState: ClientKeepaliveStateMachine

    /// - Parameter tls: the connection's TLS state, nil for plaintext. With TLS the connection
    ///   is ready (and `start`'s completion runs) once the handshake has completed and the
    ///   server's SETTINGS have arrived, within `config.tlsHandshakeTimeout`.
    init(
        socket: Socket, loop: EventLoop, authority: String, config: HTTP2ClientTransport.Config, tls: TLSEngine?,
        onClose: @escaping @Sendable (HTTP2ClientConnection) -> Void
    ) {
        self.socket = socket
        pump = SessionPump(tls: tls)
        self.loop = loop
        self.authority = authority
        self.config = config
        self.onClose = onClose
        session = NGHTTP2Session(isServer: false)
        keepaliveState = ClientKeepaliveStateMachine(permitWithoutCalls: config.keepalive?.permitWithoutCalls ?? false)
        session.delegate = self
    }

    /// Starts the handshake to `address`; `completion` runs on the loop once it is done.
    func start(to address: SocketAddress, completion: @escaping (Result<Void, RPCError>) -> Void) {
        onConnect = completion
        armDeferredFlush()
        do {
            let result = try socket.connect(to: address)
            try loop.register(socket.fileDescriptor, handler: self, readable: result == .connected, writable: result != .connected)
            if result == .connected { return socketConnected() }
            let timeout = config.connectTimeout
            setupTimer = loop.scheduleTimer(after: timeout) { [self] in
                setupTimer = nil
                guard lifecycle.isConnecting, onConnect != nil else { return }
                fail(RPCError(code: .unavailable, message: "cannot connect to \(address): no answer within \(timeout)"))
            }
        } catch {
            fail(RPCError(code: .unavailable, message: "cannot connect to \(address): \(error)"))
        }
    }

    private func socketConnected() {
        do {
            try loop.setInterest(socket.fileDescriptor, readable: true, writable: false)
        } catch {
            return fail(RPCError(code: .unavailable, message: "cannot watch the connection to \(authority): \(error)"))
        }
        perform(lifecycle.socketConnected(secure: pump.isHandshaking))
    }

    /// Carries out what the lifecycle decided.
    private func perform(_ action: ClientConnectionStateMachine.Action) {
        switch action {
        case .none:
            return
        case .beginHandshake:
            beginHandshake()
        case .startSession:
            startSession()
        case .becomeReady(let start):
            if start { startSession() }
            if let setupTimer { _ = loop.cancelTimer(setupTimer) }
            setupTimer = nil
            usable.store(true, ordering: .releasing)
            onConnect?(.success(()))
            onConnect = nil
            scheduleKeepalive()
            flush()
        case .sendGoAway:
            usable.store(false, ordering: .releasing)
            session.submitGoAway()
            flush()
        case .stopTakingStreams:
            usable.store(false, ordering: .releasing)
            onClose(self)  // no new streams here: the transport stops using this connection
        }
    }

    private func beginHandshake() {
        let timeout = config.tlsHandshakeTimeout
        setupTimer = loop.scheduleTimer(after: timeout) { [self] in
            setupTimer = nil
            guard lifecycle.isHandshaking else { return }
            close(
                RPCError(
                    code: .unavailable, message: "cannot connect to \(self.authority): the TLS handshake did not complete within \(timeout)"
                ))
        }
        // Reading advances the handshake with what is at hand: at first nothing, which makes
        // the ClientHello; the flush that follows sends it.
        readable()
    }

    /// Queues the client's preface (nghttp2 sends the magic first) and SETTINGS.
    private func startSession() {
        session.submitSettings([
            (NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, UInt32(config.streamWindowBytes)),
        ])
        session.setConnectionWindow(config.connectionWindowBytes)
    }

    func sessionReceivedSettings() {
        perform(lifecycle.settingsReceived())
    }

    /// Pings every `keepalive.time` (while RPCs are open, unless permitted without);
    /// an ACK missing after `keepalive.timeout` means the peer is gone.
    private func scheduleKeepalive() {
        guard let keepalive = config.keepalive else { return }
        keepaliveTimer = loop.scheduleTimer(after: keepalive.time) { [self] in
            keepaliveTimer = nil
            guard lifecycle.pings else { return }
            if keepaliveState.intervalElapsed(openStreams: streams.count) == .ping {
                session.submitPing()
                pingTimeout = loop.scheduleTimer(after: keepalive.timeout) { [self] in
                    pingTimeout = nil
                    guard keepaliveState.ackTimedOut() else { return }
                    close(RPCError(code: .unavailable, message: "the server did not answer a keepalive ping"))
                }
                flush()
            }
            scheduleKeepalive()
        }
    }

    func sessionReceivedReset(stream id: Int32) {}

    func sessionReceivedPing(isAck: Bool) {
        guard isAck, keepaliveState.ackReceived(), let timer = pingTimeout else { return }
        loop.cancelTimer(timer)
        pingTimeout = nil
    }

    private func fail(_ error: RPCError) {
        onConnect?(.failure(error))
        onConnect = nil
        close(error)
    }

    // MARK: Socket events

    func readable() {
        guard lifecycle.phase != .closed else { return }
        switch receive() {
        case .drained:
            flush()
        case .handshakeCompleted:
            perform(lifecycle.handshakeCompleted())
            flush()
            readable()
        case .endOfStream where lifecycle.isHandshaking:
            close(
                RPCError(
                    code: .unavailable, message: "cannot connect to \(authority): the server closed the connection during the TLS handshake"
                ))
        case .endOfStream:
            close(RPCError(code: .unavailable, message: "the server closed the connection"))
        case .failed(let error) where lifecycle.isHandshaking:
            flush()  // the alert that tells the server why
            close(RPCError(code: .unavailable, message: "cannot connect to \(authority): \(error)"))
        case .failed(let error):
            flush()
            close(RPCError(code: .unavailable, message: "the connection failed: \(error)"))
        }
    }

    func writable() {
        if lifecycle.isConnecting {
            do {
                try socket.finishConnect()
                socketConnected()
            } catch {
                fail(RPCError(code: .unavailable, message: "cannot connect: \(error)"))
            }
            return
        }
        flush()
    }

    func errorOrHangUp() {
        if lifecycle.isConnecting {
            // The loop no longer watches the socket. Either the connect failed, or it worked and
            // the server closed the connection before this loop saw it writable (a server with
            // an idle limit on a busy machine): then there is no connection to use either, and
            // treating it as ready would leave streams on a socket nobody reads.
            do {
                try socket.finishConnect()
            } catch {
                return fail(RPCError(code: .unavailable, message: "cannot connect: \(error)"))
            }
            return fail(RPCError(code: .unavailable, message: "cannot connect to \(authority): the server closed the connection at once"))
        }
        readable()
        close(RPCError(code: .unavailable, message: "the connection was lost"))
    }

    func close() {
        close(RPCError(code: .unavailable, message: "the connection closed"))
    }

    var writesFrames: Bool { lifecycle.writes }

    /// A draining connection whose streams ended and whose last bytes are out closes.
    func wrote() {
        if lifecycle.isFinished(sessionActive: session.isActive, openStreams: streams.count, unsentBytes: pump.hasUnsentBytes) {
            close(RPCError(code: .unavailable, message: "the connection closed"))
        }
    }

    func writeFailed(_ error: any Error) {
        close(RPCError(code: .unavailable, message: "writing to the connection failed: \(error)"))
    }

    private func close(_ error: RPCError) {
        guard lifecycle.close() else { return }
        for timer in [setupTimer, keepaliveTimer, pingTimeout] {
            if let timer { _ = loop.cancelTimer(timer) }
        }
        (setupTimer, keepaliveTimer, pingTimeout) = (nil, nil, nil)
        disarmDeferredFlush()
        usable.store(false, ordering: .releasing)
        keepaliveState.stop()
        loop.deregister(socket.fileDescriptor)
        pump.sendCloseNotify(to: socket)
        socket.close()
        onConnect?(.failure(error))
        onConnect = nil
        for stream in streams.values { stream.fail(error) }
        streams.removeAll()
        onClose(self)
    }

    /// Sends GOAWAY; closes once open streams end.
    func drain() {
        perform(lifecycle.drainRequested())
    }

    // MARK: Streams

    /// Submits the request headers for `stream`. Returns false, touching nothing, when the
    /// connection is no longer ready (a GOAWAY arrived first): the caller may open the stream
    /// on another connection, since nothing of it has left.
    func startRequest(_ stream: ClientStream, metadata: Metadata, timeout: Duration?) -> Bool {
        loop.assertInEventLoop()
        guard lifecycle.takesStreams else { return false }
        var headers = [
            (name: ":method", value: "POST"), (":scheme", pump.isSecure ? "https" : "http"), (":path", stream.descriptor.path),
            (":authority", authority),
        ]
        headers += stream.call.requestHeaders(metadata: metadata, timeout: timeout)
        do {
            let id = try session.submitRequest(headers: headers)
            try stream.opened(id: id)
            streams.insert(stream, id: id)
        } catch {
            stream.fail(RPCError(code: .unavailable, message: "cannot open a stream: \(error)"))
        }
        scheduleFlush()
        return true
    }

    func queueData(_ stream: ClientStream, framed: BodyBytes) {
        loop.assertInEventLoop()
        if stream.machine.requestData(framed) { resume(stream) }
        scheduleFlush()
    }

    func endRequest(_ stream: ClientStream) {
        loop.assertInEventLoop()
        if stream.machine.requestEnded() { resume(stream) }
        scheduleFlush()
    }

    /// The caller is done with the stream: reset it if the server has not finished, and fail
    /// it if it never started, so no reader waits on it.
    func release(_ stream: ClientStream) {
        loop.assertInEventLoop()
        guard let id = stream.id, streams[id] != nil else {
            return stream.fail(RPCError(code: .cancelled, message: "the stream ended before it started"))
        }
        session.resetStream(id, errorCode: NGHTTP2_CANCEL.rawValue)
        flush()
    }

    /// nghttp2 waits for the stream's data (it was deferred): resume it.
    private func resume(_ stream: ClientStream) {
        guard let id = stream.id else { return }
        session.resumeData(stream: id)
    }

    private func messageRead(stream id: Int32) {
        guard let stream = streams[id] else { return }
        returnWindow(stream.window.read(), stream: id)
    }

    // MARK: Session events

    func sessionBeganHeaders(stream id: Int32) {
        streams[id]?.headers = []
    }

    func sessionReceivedHeader(name: String, value: String, stream id: Int32) {
        streams[id]?.headers.append((name, value))
    }

    /// A response whose headers or trailers pass the limit fails, and the stream is reset.
    func sessionHeaderListTooLarge(stream id: Int32, limit: Int) {
        guard let stream = streams[id] else { return }
        stream.headers = []
        stream.fail(RPCError(code: .resourceExhausted, message: "the response's header list exceeds the client's limit of \(limit) bytes"))
        session.resetStream(id, errorCode: NGHTTP2_CANCEL.rawValue)
    }

    func sessionEndedHeaders(stream id: Int32, endStream: Bool) {
        guard let stream = streams[id] else { return }
        stream.receivedHeaders(endStream: endStream)
    }

    func sessionReceivedData(_ data: UnsafeRawBufferPointer, stream id: Int32) {
        guard let stream = streams[id] else {
            session.consume(stream: id, bytes: data.count)
            return
        }
        let early = stream.receivedData(data)
        if early > 0 { session.consume(stream: id, bytes: early) }
    }

    func sessionEndedData(stream id: Int32) {
        streams[id]?.receivedEnd()
    }

    func sessionClosedStream(_ id: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        returnConnectionWindow(stream.window.outstanding)
        let error: RPCError =
            switch errorCode {
            case NGHTTP2_REFUSED_STREAM.rawValue: RPCError(code: .unavailable, message: "the server refused the stream")
            case NGHTTP2_CANCEL.rawValue: RPCError(code: .cancelled, message: "the stream was cancelled")
            default: RPCError(code: .internal, message: "the server reset the stream (HTTP/2 error \(errorCode))")
            }
        stream.fail(error)
        if lifecycle.phase == .draining && streams.isEmpty { flush() }
    }

    func sessionReceivedGoAway(lastStreamID: Int32, errorCode: UInt32) {
        perform(lifecycle.goAwayReceived())
    }

    func sessionReadData(
        stream id: Int32, source: UnsafeMutableRawPointer?, into buffer: UnsafeMutableRawBufferPointer
    ) -> NGHTTP2Session.DataChunk {
        guard let stream = streams[id] else { return .bytes(count: 0, end: true, trailers: false) }
        let (count, step) = stream.machine.readData(into: buffer)
        stream.outbound.sent(count)
        switch step {
        case .more: return .bytes(count: count, end: false, trailers: false)
        case .deferred: return .deferred
        case .end: return .bytes(count: count, end: true, trailers: false)  // a request ends with END_STREAM
        }
    }

    /// Called by a stream's inbound buffer (on any thread) as its reader takes a message.
    func messageReadFromAnyThread(stream key: ClientStream.Key) {
        loop.execute {
            let id = key.id.load(ordering: .relaxed)
            guard id != 0 else { return }
            self.messageRead(stream: id)
        }
    }
}
