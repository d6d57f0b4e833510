import PitlaneCore

/// One WebSocket connection after its opening handshake, plaintext or TLS, on one event
/// loop: ``WebSocketFrameDecoder`` reads the client's frames, ``WebSocketFrame`` writes the
/// server's, and the handler's task reads ``WebSocket/messages`` and sends.
///
/// Bounded both ways: received messages the handler has not read stop the reading once
/// they pass ``WebSocketLimits/maxUnreadBytes`` (TCP then holds the client back), and
/// ``WebSocket/send(_:)`` waits while ``WebSocketLimits/outboundHighWatermark`` bytes wait
/// for the client.
///
/// Loop-owned: the transport and the handler's ``WebSocket`` hold it in a ``LoopBound``.
final class WebSocketConnection: FileDescriptorHandler, ServerConnection {
    let socket: Socket
    let loop: EventLoop
    let peer: String
    private let channel: ByteChannel
    private let limits: WebSocketLimits
    private var decoder: WebSocketFrameDecoder
    private let onClose: (any ServerConnection) -> Void
    private let inbound: BufferedStream<WebSocketMessage>
    private let outbound: StreamOutbound
    /// What waits for the socket, in order: the 101 response, then frames.
    private var output = Deque<Output>()
    /// Bytes of `output`'s first element already written.
    private var outputOffset = 0
    /// Frames the client sent right behind its upgrade request, read by the HTTP/1.1 parser.
    private var receivedAlready: [UInt8]
    private var phase = Phase.open
    /// Our close frame is queued: nothing is queued after it.
    private var closeQueued = false
    /// The client's close frame came.
    private var closeReceived = false
    /// The client broke the protocol or a limit: its bytes are no longer read as frames.
    private var failed = false
    private var keepalive = WebSocketKeepalive()
    /// Bytes of messages handed to the handler and not read yet.
    private var unreadBytes = 0
    private var readingPaused = false
    private var wantsWritable = false
    private var idleTimer: EventLoop.TimerID?
    private var closeTimer: EventLoop.TimerID?

    private enum Phase {
        case open
        /// Our close frame is queued or sent, or the client's came: no more messages out.
        case closing
        /// Our close frame is out after a failure, and the client may still be sending: the
        /// write side is shut, and what arrives is read and dropped until the client closes or
        /// `closeTimeout` passes, so that the kernel does not answer it with a reset that
        /// could destroy the close frame.
        case lingering
        case closed
    }

    /// Bytes for the socket, and the handler's payload bytes among them (released to
    /// `outbound` once written).
    private struct Output {
        var bytes: [UInt8]
        var payload: Int
    }

    /// The handler's view of this connection.
    private(set) var webSocket: WebSocket!

    init(
        socket: Socket, loop: EventLoop, tls: TLSEngine?, peer: String, head: HTTPRequestHead, limits: WebSocketLimits,
        handshakeResponse: [UInt8], receivedAlready: [UInt8], onClose: @escaping (any ServerConnection) -> Void
    ) {
        self.socket = socket
        self.loop = loop
        self.peer = peer
        self.limits = limits
        self.onClose = onClose
        self.receivedAlready = receivedAlready
        output.append(Output(bytes: handshakeResponse, payload: 0))
        channel = ByteChannel(socket: socket, tls: tls)
        decoder = WebSocketFrameDecoder(maxMessageBytes: limits.maxMessageBytes)
        let owner = LoopBound(WeakOwner(), loop: loop)
        inbound = BufferedStream(highWatermark: limits.maxUnreadBytes, sizeOf: { $0.byteCount }) { bytes in
            owner.loop.execute { owner.value.connection?.handlerRead(bytes) }
        }
        outbound = StreamOutbound(highWatermark: limits.outboundHighWatermark)
        owner.value.connection = self
        webSocket = WebSocket(
            path: head.path, peer: peer, requestHeaders: head.headers, connection: LoopBound(self, loop: loop),
            messages: inbound, outbound: outbound)
    }

    /// Lets the inbound stream's consumer reach the connection without keeping it alive.
    private final class WeakOwner {
        weak var connection: WebSocketConnection?
    }

    /// Registers the socket and writes the 101 response; on the loop.
    func start() throws {
        try loop.register(socket.fileDescriptor, handler: self, readable: true, writable: false)
        armIdleTimer()
        flush()
        if !receivedAlready.isEmpty || channel.tls != nil { readable() }
    }

    // MARK: Socket events

    func readable() {
        if phase == .lingering { return discardInput() }
        if !receivedAlready.isEmpty {
            let bytes = receivedAlready
            receivedAlready = []
            bytes.withUnsafeBytes { decode($0) }
        }
        let buffer = channel.readBuffer(loop.readBuffer)
        while phase == .open || phase == .closing, !readingPaused, !failed {
            switch channel.read(into: buffer, flush: flush) {
            case .bytes(let count):
                keepalive.frameReceived()
                decode(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            case .wouldBlock:
                return flush()
            case .end, .failed:
                return connectionLost()
            }
        }
        flush()
    }

    private func decode(_ bytes: UnsafeRawBufferPointer) {
        do throws(WebSocketFrameDecoder.Failure) {
            try decoder.feed(bytes) { event in received(event) }
        } catch {
            fail(error)
        }
    }

    /// The client broke the protocol or a limit: the close frame says which, and the
    /// connection lingers once it is out.
    private func fail(_ failure: WebSocketFrameDecoder.Failure) {
        failed = true
        if !closeReceived { inbound.finish(throwing: WebSocketClosed(reason: failure.reason)) }
        startClosing(failure.code, reason: failure.reason)
    }

    private func linger() {
        guard phase != .closed, phase != .lingering else { return }
        phase = .lingering
        outbound.close(RPCError(code: .unavailable, message: "the connection is closing"))
        channel.shutdownWrite()
        readingPaused = false
        wantsWritable = false
        updateInterest()
        armCloseTimer()
        discardInput()
    }

    private func discardInput() {
        let buffer = channel.readBuffer(loop.readBuffer)
        while true {
            switch channel.read(into: buffer, flush: {}) {
            case .bytes: continue
            case .wouldBlock: return
            case .end, .failed: return finishClose()
            }
        }
    }

    func writable() {
        flush()
        if channel.tls != nil { readable() }
    }

    func errorOrHangUp() { connectionLost() }

    // MARK: Frames in

    private func received(_ event: WebSocketFrameDecoder.Event) {
        switch event {
        case .message(let message):
            deliver(message)
        case .ping(let payload):
            if !closeQueued { queue(payload.withUnsafeBytes { WebSocketFrame.encode(.pong, $0) }, payload: 0) }
        case .pong:
            break  // liveness only
        case .close(let code, _):
            closeReceived = true
            inbound.finish()
            outbound.close(
                RPCError(code: .unavailable, message: "the client closed the connection (\(code ?? WebSocketCloseCode(rawValue: 1005)))"))
            // The answer repeats the client's code (RFC 6455 §5.5.1).
            startClosing(code, reason: "")
        }
    }

    private func deliver(_ message: WebSocketMessage) {
        guard phase == .open, inbound.yield(message) else { return }
        unreadBytes += message.byteCount
        if unreadBytes > limits.maxUnreadBytes, !readingPaused {
            readingPaused = true
            updateInterest()
        }
    }

    /// The handler read `bytes`: reading resumes once half the allowance is free.
    private func handlerRead(_ bytes: Int) {
        unreadBytes -= bytes
        guard readingPaused, unreadBytes <= limits.maxUnreadBytes / 2, phase != .closed else { return }
        readingPaused = false
        updateInterest()
        readable()
    }

    // MARK: Frames out

    /// A message from the handler; dropped (and released) once closing.
    func queue(_ message: WebSocketMessage) {
        guard phase == .open else { return outbound.sent(message.byteCount) }
        queue(WebSocketFrame.encode(message), payload: message.byteCount)
    }

    private func queue(_ frame: [UInt8], payload: Int) {
        output.append(Output(bytes: frame, payload: payload))
        flush()
    }

    func flush() {
        guard phase == .open || phase == .closing else { return }
        do {
            while let next = output.first {
                let written = try next.bytes.withUnsafeBytes { try channel.write(UnsafeRawBufferPointer(rebasing: $0[outputOffset...])) }
                guard written > 0 else { break }
                outputOffset += written
                guard outputOffset == next.bytes.count else { continue }
                _ = output.popFirst()
                outputOffset = 0
                if next.payload > 0 { outbound.sent(next.payload) }
            }
            let drained = try output.isEmpty && channel.finishWriting()
            if drained && closeQueued {
                // Both close frames are through; or ours went after a failure, and the
                // client's may never come.
                if closeReceived { return finishClose() }
                if failed { return linger() }
            }
            wantWritable(!drained)
        } catch {
            connectionLost()
        }
    }

    private func wantWritable(_ wanted: Bool) {
        guard wanted != wantsWritable else { return }
        wantsWritable = wanted
        updateInterest()
    }

    private func updateInterest() {
        guard phase != .closed else { return }
        do {
            try loop.setInterest(socket.fileDescriptor, readable: !readingPaused, writable: wantsWritable)
        } catch {
            finishClose()
        }
    }

    // MARK: Closing

    /// Starts the close handshake; the connection closes once the client answers, or after
    /// `closeTimeout`.
    func close(_ code: WebSocketCloseCode, reason: String) {
        guard phase == .open else { return }
        startClosing(code, reason: reason)
    }

    /// Queues our close frame (once), stops the handler's sends and waits, at most
    /// `closeTimeout`, for the client's.
    private func startClosing(_ code: WebSocketCloseCode?, reason: String) {
        guard phase == .open || phase == .closing else { return }
        phase = .closing
        outbound.close(RPCError(code: .unavailable, message: "the connection is closing (\(code ?? WebSocketCloseCode(rawValue: 1005)))"))
        armCloseTimer()
        guard !closeQueued else { return flush() }
        closeQueued = true
        queue(WebSocketFrame.close(code, reason: reason), payload: 0)
    }

    /// The handler returned, or threw.
    func handlerEnded(failed: Bool) {
        close(failed ? .internalError : .normalClosure, reason: failed ? "the server failed" : "")
    }

    /// The server shuts down.
    func drain() {
        close(.goingAway, reason: "the server is shutting down")
    }

    /// Closes at once.
    func close() {
        finishClose()
    }

    private func connectionLost() {
        guard phase != .closed else { return }
        if !closeReceived {
            inbound.finish(throwing: WebSocketClosed(reason: "the connection was lost"))
        }
        finishClose()
    }

    private func finishClose() {
        guard phase != .closed else { return }
        phase = .closed
        if let idleTimer { _ = loop.cancelTimer(idleTimer) }
        if let closeTimer { _ = loop.cancelTimer(closeTimer) }
        loop.deregister(socket.fileDescriptor)
        socket.close()
        inbound.finish()
        outbound.close(RPCError(code: .unavailable, message: "the connection closed"))
        output.removeAll()
        onClose(self)
    }

    // MARK: Timers

    private func armIdleTimer() {
        idleTimer = loop.scheduleTimer(after: limits.idleTimeout) { [weak self] in
            guard let self, self.phase != .closed else { return }
            switch self.keepalive.intervalElapsed() {
            case .none:
                break
            case .ping:
                if !self.closeQueued { self.queue(WebSocketFrame.encode(.ping, UnsafeRawBufferPointer(start: nil, count: 0)), payload: 0) }
            case .close:
                self.close(.goingAway, reason: "no answer to ping")
            }
            self.armIdleTimer()
        }
    }

    private func armCloseTimer() {
        guard closeTimer == nil else { return }
        closeTimer = loop.scheduleTimer(after: limits.closeTimeout) { [weak self] in
            self?.connectionLost()
        }
    }
}
