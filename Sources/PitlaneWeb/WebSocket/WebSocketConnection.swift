import PitlaneCore

/// One WebSocket connection after its opening handshake, plaintext or TLS, on one event
/// loop: wslay frames the bytes, the handler's task reads ``WebSocket/messages`` and sends.
///
/// Bounded both ways: received messages the handler has not read stop the reading once
/// they pass ``WebSocketLimits/maxUnreadBytes`` (TCP then holds the client back), and
/// ``WebSocket/send(_:)`` waits while ``WebSocketLimits/outboundHighWatermark`` bytes wait
/// for the client.
///
/// Loop-owned: the transport and the handler's ``WebSocket`` hold it in a ``LoopBound``.
final class WebSocketConnection: FileDescriptorHandler, ServerConnection, WSLayContextDelegate {
    let socket: Socket
    let loop: EventLoop
    let peer: String
    private let channel: ByteChannel
    private let limits: WebSocketLimits
    private let wslay: WSLayContext
    private let onClose: (any ServerConnection) -> Void
    private let inbound: BufferedStream<WebSocketMessage>
    private let outbound: StreamOutbound
    /// The 101 response, written before any frame.
    private var handshakeResponse: [UInt8]
    /// Frames the client sent right behind its upgrade request, read by the HTTP/1.1 parser.
    private var receivedAlready: [UInt8]
    private var phase = Phase.open
    private var keepalive = WebSocketKeepalive()
    /// Bytes of messages handed to the handler and not read yet.
    private var unreadBytes = 0
    private var readingPaused = false
    private var wantsWritable = false
    /// Bytes the handler queued that `outbound` still counts.
    private var payloadQueued = 0
    private var idleTimer: EventLoop.TimerID?
    private var closeTimer: EventLoop.TimerID?

    private enum Phase {
        case open
        /// A close frame is queued or sent, or came: no more messages out.
        case closing
        /// Our close frame is out after an error, and the client may still be sending: the
        /// write side is shut, and what arrives is read and dropped until the client closes or
        /// `closeTimeout` passes, so that the kernel does not answer it with a reset that
        /// could destroy the close frame.
        case lingering
        case closed
    }

    /// The socket reached its end or failed (not a protocol error).
    private var inputEnded = false

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
        self.handshakeResponse = handshakeResponse
        self.receivedAlready = receivedAlready
        channel = ByteChannel(socket: socket, tls: tls)
        wslay = WSLayContext(maxMessageBytes: limits.maxMessageBytes)
        let owner = LoopBound(WeakOwner(), loop: loop)
        inbound = BufferedStream(highWatermark: limits.maxUnreadBytes, sizeOf: { $0.byteCount }) { bytes in
            owner.loop.execute { owner.value.connection?.handlerRead(bytes) }
        }
        outbound = StreamOutbound(highWatermark: limits.outboundHighWatermark)
        owner.value.connection = self
        wslay.delegate = self
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
        guard phase != .closed, !readingPaused else { return }
        guard wslay.receive() else { return receiveFailed() }
        flush()
    }

    /// wslay gave up: the socket ended, or the client broke the protocol. For the latter
    /// wslay queues a close frame without a code; the RFC's answer is 1002, written here as
    /// the four bytes of an unmasked close frame instead.
    private func receiveFailed() {
        guard !inputEnded else { return connectionLost() }
        if !wslay.closeSent {
            let protocolError: [UInt8] = [0x88, 0x02, 0x03, 0xEA]  // FIN + close, 2 bytes: 1002
            _ = try? protocolError.withUnsafeBytes { try channel.write($0) }
            _ = try? channel.finishWriting()
        }
        if !wslay.closeReceived { inbound.finish(throwing: WebSocketClosed(reason: "the client broke the WebSocket protocol")) }
        linger()
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

    // MARK: wslay's callbacks

    func wslayRead(into buffer: UnsafeMutableRawBufferPointer) -> WSLayContext.Transfer {
        guard !readingPaused else { return .wouldBlock }
        if !receivedAlready.isEmpty {
            let count = min(buffer.count, receivedAlready.count)
            buffer.copyBytes(from: receivedAlready[0..<count])
            receivedAlready.removeFirst(count)
            return .bytes(count)
        }
        switch channel.read(into: buffer, flush: flush) {
        case .bytes(let count): return .bytes(count)
        case .wouldBlock: return .wouldBlock
        case .end, .failed:
            inputEnded = true
            return .failed
        }
    }

    func wslayWrite(_ bytes: UnsafeRawBufferPointer) -> WSLayContext.Transfer {
        do {
            let written = try channel.write(bytes)
            return written > 0 ? .bytes(written) : .wouldBlock
        } catch {
            return .failed
        }
    }

    func wslayFrameStarted(final: Bool, opcode: UInt8, payloadLength: UInt64) {
        keepalive.frameReceived()
        // RFC 6455 §5.5: control frames are never fragmented and carry at most 125 bytes; a
        // close frame's payload is empty or a two-byte code first. wslay answers these with a
        // close frame without a code; the RFC's answer is 1002.
        guard opcode & 0x8 != 0 else { return }
        if !final || payloadLength > 125 || (opcode == WSLayContext.close && payloadLength == 1) {
            close(.protocolError, reason: "malformed control frame")
            wslay.stopReading()
        }
    }

    func wslayReceived(opcode: UInt8, payload: UnsafeRawBufferPointer, closeCode: UInt16) {
        switch opcode {
        case WSLayContext.text:
            guard let text = String(validating: payload, as: UTF8.self) else {
                return close(.invalidPayload, reason: "a text message was not valid UTF-8")
            }
            deliver(.text(text))
        case WSLayContext.binary:
            deliver(.binary(Array(payload)))
        case WSLayContext.close:
            // wslay queued the answering close frame; what the client sent before is all there is.
            phase = .closing
            inbound.finish()
            outbound.close(RPCError(code: .unavailable, message: "the client closed the connection (\(closeCode))"))
            armCloseTimer()
        default:
            break  // ping (answered by wslay) and pong: liveness only
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

    // MARK: Sending

    /// A message from the handler; dropped (and released) once closing.
    func queue(_ message: WebSocketMessage) {
        let queued: Bool
        switch message {
        case .text(let text):
            var text = text
            queued = phase == .open && text.withUTF8 { wslay.queue(opcode: WSLayContext.text, UnsafeRawBufferPointer($0)) }
        case .binary(let bytes):
            queued = phase == .open && bytes.withUnsafeBytes { wslay.queue(opcode: WSLayContext.binary, $0) }
        }
        guard queued else { return outbound.sent(message.byteCount) }
        payloadQueued += message.byteCount
        flush()
    }

    func flush() {
        guard phase != .closed, phase != .lingering else { return }
        do {
            while !handshakeResponse.isEmpty {
                let written = try handshakeResponse.withUnsafeBytes { try channel.write($0) }
                guard written > 0 else { return wantWritable(true) }
                handshakeResponse.removeFirst(written)
            }
            guard wslay.send() else { return connectionLost() }
            let ciphertextWritten = try channel.finishWriting()
            releaseSent()
            if !wslay.wantsRead && !wslay.wantsWrite && ciphertextWritten {
                // Both close frames are through; or ours went after an error, and the client's
                // may never come.
                return wslay.closeReceived ? finishClose() : linger()
            }
            wantWritable(wslay.wantsWrite || !ciphertextWritten)
        } catch {
            connectionLost()
        }
    }

    /// Tells the handler's writers how much of what they queued has left.
    private func releaseSent() {
        let released = payloadQueued - min(payloadQueued, wslay.queuedBytes)
        guard released > 0 else { return }
        payloadQueued -= released
        outbound.sent(released)
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
        phase = .closing
        _ = wslay.queueClose(code.rawValue, reason: reason)
        outbound.close(RPCError(code: .unavailable, message: "the connection is closing (\(code))"))
        armCloseTimer()
        flush()
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
        if !wslay.closeReceived {
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
                _ = [UInt8]().withUnsafeBytes { self.wslay.queue(opcode: WSLayContext.ping, $0) }
                self.flush()
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
