import PitlaneCore

/// One accepted HTTP/1.1 connection, plaintext or TLS: gRPC-Web and Connect calls from browsers,
/// `curl` and Connect clients, one request at a time, keep-alive between them. Pipelined
/// requests wait, unparsed and bounded, until the response before them is written.
///
/// A request past a limit, malformed or ambiguous (both `content-length` and
/// `transfer-encoding`, two lengths: request smuggling) gets its status and
/// `connection: close`; the connection then stops writing, reads what the client still
/// sends for a moment so that the response is not lost to a reset, and closes.
///
/// Loop-owned: the transport holds it in a ``LoopBound``, and so do its handlers' writers.
final class HTTP1ServerConnection: ServingConnection, HTTP1ParserDelegate, ServerCallConnection {
    let socket: Socket
    let loop: EventLoop
    /// The transport's configuration: stream window and message limits.
    let config: HTTP2ServerTransport.Config
    let web: WebConfig
    let peer: String
    private let limits: HTTP1Limits
    let callLimits: ServerCallLimits
    let accept: RPCAcceptor
    private let onClose: @Sendable (any ServerConnection) -> Void
    private let parser: HTTP1Parser
    /// The socket, through TLS (whose handshake is complete, ``TLSHandshaker``) or not.
    private let channel: ByteChannel
    var output = HTTP1Output()
    /// Bytes read after a complete request: the next, pipelined one, parsed once the
    /// current response is written.
    private var unparsed: [UInt8] = []
    /// The request being served.
    private(set) var exchange: HTTP1Exchange?
    private var requestsStarted = 0
    private var phase = Phase.open
    private var wantsWritable = false
    private var readingPaused = false
    /// Closes an idle connection, or one whose request head is slow to arrive.
    private var waitTimer: EventLoop.TimerID?
    /// Whether `waitTimer` is running the head timeout (a request has begun).
    private var waitingForHead = false

    /// A WebSocket upgrade accepted in the request's head; the switch happens once the
    /// parser has stopped after the head.
    private var pendingUpgrade: (head: HTTPRequestHead, response: [UInt8], handler: WebSocketEndpoint.Handler)?
    private let webSockets: WebSocketHandOff?

    private enum Phase {
        case open
        /// The socket belongs to a WebSocket connection now.
        case upgraded
        /// Write what is queued, then close (after lingering).
        case closingAfterWrite
        /// The write side is shut; reading and discarding until the client closes or the
        /// linger ends.
        case lingering
        case closed
    }

    init(_ accepted: AcceptedConnection, web: WebConfig) {
        webSockets = web.webSocket.map { _ in WebSocketHandOff(accepted) }
        socket = accepted.socket
        loop = accepted.loop
        config = accepted.config
        self.web = web
        peer = accepted.peer
        accept = accepted.accept
        onClose = accepted.onClose
        channel = ByteChannel(socket: accepted.socket, tls: accepted.tls)
        limits = web.http1
        callLimits = ServerCallLimits(maxMessageBytes: config.rpc.maxMessageBytes, responseCompression: config.rpc.responseCompression)
        parser = HTTP1Parser(maxHeaderBytes: limits.maxHeaderBytes)
        parser.delegate = self
    }

    /// Registers the socket; on the loop. Bytes the client sent already are still in it.
    func start() throws {
        try loop.register(socket.fileDescriptor, handler: self, readable: true, writable: false)
        armWait(limits.idleTimeout, forHead: false)
    }

    /// ``start()``, then the bytes a ``ProtocolSniffer`` read to tell HTTP/1.1 from HTTP/2.
    func start(receivedAlready bytes: [UInt8]) throws {
        try start()
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { received($0) }
    }

    // MARK: Socket events

    func readable() {
        let buffer = channel.readBuffer(loop.readBuffer)
        while phase != .closed && phase != .upgraded && !readingPaused {
            let count: Int
            switch channel.read(into: buffer, flush: flush) {
            case .bytes(let read): count = read
            case .wouldBlock: return
            case .end: return endOfInput()
            case .failed: return close()
            }
            if phase == .lingering { continue }  // the answer is sent: discard
            received(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    func writable() {
        flush()
        if channel.tls != nil { readable() }
    }

    func errorOrHangUp() { close() }

    private func endOfInput() {
        if phase == .open, exchange == nil || exchange?.requestComplete == false {
            do {
                try parser.finish()
            } catch {
                // A request cut short: nothing to answer, no one to read it.
            }
        }
        // A half-closed client may still read a response that is on its way.
        if let exchange, exchange.requestComplete, phase == .open {
            closeAfterResponse = true
            readingPaused = true
            updateInterest()
            return
        }
        close()
    }

    /// Whether to close once the current response is written.
    var closeAfterResponse = false

    /// The response is written (queued) and the request read: on to the next request, or
    /// close. Runs as its own loop task, never inside a parser callback.
    func finishExchange() {
        loop.executeLater { [self] in
            guard let exchange, exchange.responseComplete, exchange.requestComplete || closeAfterResponse else { return }
            self.exchange = nil
            guard phase == .open else { return }
            if closeAfterResponse {
                phase = .closingAfterWrite
                return flush()
            }
            armWait(limits.idleTimeout, forHead: false)
            parseNext()
        }
    }

    /// Reading resumes once the handler has caught up and no pipelined request waits.
    func resumeReading() {
        guard readingPaused, phase == .open, unparsed.count <= limits.maxHeaderBytes else { return }
        readingPaused = false
        updateInterest()
        loop.executeLater { [self] in readable() }
    }

    // MARK: Parsing

    private func received(_ bytes: UnsafeRawBufferPointer) {
        if exchange == nil, !waitingForHead {
            armWait(limits.headTimeout, forHead: true)
        }
        guard unparsed.isEmpty, !parser.isPaused else {
            unparsed.append(contentsOf: bytes)
            if unparsed.count > limits.maxHeaderBytes {
                // A pipelined request waits; the socket keeps the rest until it is served.
                readingPaused = true
                updateInterest()
            }
            return
        }
        parse(bytes)
    }

    /// Parses what is buffered or given, keeping what follows a complete request.
    private func parse(_ bytes: UnsafeRawBufferPointer) {
        do {
            let taken = try parser.parse(bytes)
            if taken < bytes.count { unparsed.append(contentsOf: bytes[taken...]) }
            if let upgrade = pendingUpgrade { return switchToWebSocket(upgrade) }
        } catch {
            switch error {
            case .stopped: return
            case .requestLineTooLong: reject(414, "the request line exceeds \(limits.maxHeaderBytes) bytes")
            case .headersTooLarge: reject(431, "the request's headers exceed \(limits.maxHeaderBytes) bytes")
            case .malformed(let reason): reject(400, "malformed request: \(reason)")
            }
        }
        flush()
    }

    /// After a response: the next pipelined request, then reading again.
    private func parseNext() {
        parser.resume()
        let pending = unparsed
        unparsed = []
        if !pending.isEmpty {
            pending.withUnsafeBytes { parse($0) }
        }
        if exchange?.isReadPaused != true { resumeReading() }
    }

    func parserReceivedHead(_ received: HTTP1Parser.RequestHead) -> Bool {
        cancelWait()
        let head = received.head
        if received.contentLengthCount > 1 || (received.contentLengthCount > 0 && received.hasTransferEncoding) {
            return reject(400, "a request may not carry two lengths (content-length with transfer-encoding, or twice)")
        }
        if let encoding = head.header("transfer-encoding"), encoding.lowercased() != "chunked" {
            return reject(501, "transfer-encoding \(encoding) is not supported")
        }
        guard received.version.major == 1 else { return reject(505, "HTTP/\(received.version.major) is not served here") }
        if received.version.minor >= 1, head.header("host") == nil { return reject(400, "an HTTP/1.1 request needs a host header") }
        if let length = head.header("content-length").flatMap(Int.init), length > limits.maxBodyBytes {
            return reject(413, "the request body of \(length) bytes exceeds \(limits.maxBodyBytes)")
        }
        switch WebSocketHandshake.evaluate(
            head, isHTTP11: received.version.minor >= 1, endpoint: webSockets == nil ? nil : web.webSocket,
            cors: web.cors)
        {
        case .notAnUpgrade:
            break
        case .refuse(let status, let headers, let reason):
            return reject(status, reason, headers: headers)
        case .accept(let response, let handler):
            pendingUpgrade = (head, response, handler)
            return true
        }
        requestsStarted += 1
        let exchange = HTTP1Exchange(
            id: Int32(truncatingIfNeeded: requestsStarted), outboundHighWatermark: config.http2.streamWindowBytes,
            keepAlive: received.keepAlive && requestsStarted < limits.maxRequestsPerConnection,
            chunked: received.version.minor >= 1
        )
        self.exchange = exchange
        if head.header("expect")?.lowercased() == "100-continue" { output.append("HTTP/1.1 100 Continue\r\n\r\n") }
        startRPC(head, exchange)
        return phase == .open
    }

    func parserReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let exchange else { return true }
        exchange.bodyBytes += bytes.count
        guard exchange.bodyBytes <= limits.maxBodyBytes else {
            return reject(413, "the request body exceeds \(limits.maxBodyBytes) bytes")
        }
        guard var call = exchange.call, let inbound = exchange.inbound else { return true }
        exchange.call = nil  // one reference: the body grows in place
        do {
            try call.appendBody(bytes)
            while let message = try call.nextMessage() {
                exchange.unreadBytes += message.bytes.count + 5
                let part = try call.requestPart(message, limit: config.rpc.maxMessageBytes, counting: exchange.outbound)
                // The call back in its exchange while the handler hears of the part: it may
                // answer from here, and what that changes in the call is kept.
                exchange.call = call
                inbound.yield(part)
                call = exchange.call ?? call
                exchange.call = nil
            }
        } catch {
            exchange.call = call
            inbound.finish(throwing: error)
            call = exchange.call ?? call
        }
        exchange.call = call
        if exchange.unreadBytes > config.http2.streamWindowBytes, !exchange.isReadPaused {
            // TCP's own flow control holds the client until the handler reads.
            exchange.isReadPaused = true
            readingPaused = true
            updateInterest()
        }
        return true
    }

    func parserCompletedRequest() {
        guard let exchange else { return }
        exchange.requestComplete = true
        if var call = exchange.call, let inbound = exchange.inbound {
            // The call goes back before the handler hears of the end: it may answer from here.
            do {
                let last = try call.finishBody().map {
                    try call.requestPart((false, $0), limit: config.rpc.maxMessageBytes, counting: exchange.outbound)
                }
                exchange.call = call
                if let last { inbound.yield(last) }
                inbound.finish()
            } catch {
                exchange.call = call
                inbound.finish(throwing: error)
            }
        }
        if exchange.responseComplete { finishExchange() }
    }

    /// Answers a request that cannot be served with `status` and closes. Returns false, for
    /// the parser callbacks that call it: parsing stops.
    @discardableResult
    private func reject(_ status: Int, _ reason: String, headers: [(name: String, value: String)] = []) -> Bool {
        guard phase == .open else { return false }
        if let exchange {
            end(exchange, error: RPCError(code: .cancelled, message: "the request was rejected: \(reason)"))
            self.exchange = nil
            if exchange.headSent {
                // A response is on its way already: it cannot be replaced, only cut short.
                close()
                return false
            }
        }
        let body = Array((reason + "\n").utf8)
        output.appendHead(
            HTTPResponseHead(status: status, headers: [("content-type", "text/plain")] + headers), framing: .length(body.count),
            closing: true)
        output.appendBody(BodyBytes(body), chunked: false, outbound: nil)
        phase = .closingAfterWrite
        flush()
        return false
    }

    // MARK: Writing

    func flush() {
        guard phase == .open || phase == .closingAfterWrite else { return }
        do {
            var remaining = try output.write { try channel.write($0) }
            if !remaining { remaining = try !channel.finishWriting() }
            if remaining != wantsWritable {
                wantsWritable = remaining
                updateInterest()
            }
            if !remaining, phase == .closingAfterWrite { linger() }
        } catch {
            close()
        }
    }

    private func updateInterest() {
        guard phase != .closed, phase != .upgraded else { return }
        do {
            try loop.setInterest(socket.fileDescriptor, readable: !readingPaused || phase == .lingering, writable: wantsWritable)
        } catch {
            close()
        }
    }

    /// Stops writing and reads what the client still sends, for a moment, so that the
    /// kernel does not answer it with a reset that could destroy the response.
    private func linger() {
        phase = .lingering
        channel.shutdownWrite()
        readingPaused = false
        updateInterest()
        armWait(Self.lingerTime, forHead: false)
    }

    static let lingerTime: Duration = .seconds(2)

    // MARK: Timers

    private func armWait(_ delay: Duration, forHead: Bool) {
        cancelWait()
        waitingForHead = forHead
        waitTimer = loop.scheduleTimer(after: delay) { [weak self] in
            guard let self else { return }
            self.waitTimer = nil
            if self.waitingForHead && self.phase == .open {
                self.reject(408, "the request's head did not arrive within \(self.limits.headTimeout)")
            } else {
                self.close()
            }
        }
    }

    private func cancelWait() {
        if let waitTimer { _ = loop.cancelTimer(waitTimer) }
        waitTimer = nil
        waitingForHead = false
    }

    // MARK: Closing

    /// The socket and what the client sent after its upgrade request go to a WebSocket
    /// connection, which answers 101 and runs the handler.
    private func switchToWebSocket(_ upgrade: (head: HTTPRequestHead, response: [UInt8], handler: WebSocketEndpoint.Handler)) {
        guard let webSockets, let endpoint = web.webSocket else { return }
        pendingUpgrade = nil
        phase = .upgraded
        cancelWait()
        loop.deregister(socket.fileDescriptor)
        let next = WebSocketConnection(
            socket: socket, loop: loop, tls: channel.tls, peer: peer, head: upgrade.head, limits: endpoint.limits,
            handshakeResponse: upgrade.response, receivedAlready: unparsed, onClose: onClose)
        unparsed = []
        webSockets.takeOver(self, next)
        if !webSockets.run(next, upgrade.handler) { next.drain() }
    }

    /// Closes the socket; a call in progress is cancelled.
    func close() {
        guard phase != .closed, phase != .upgraded else { return }
        phase = .closed
        cancelWait()
        loop.deregister(socket.fileDescriptor)
        socket.close()
        if let exchange { end(exchange, error: RPCError(code: .unavailable, message: "the connection closed")) }
        exchange = nil
        onClose(self)
    }

    /// Serves the request in progress, then closes; closes at once when idle.
    func drain() {
        guard phase == .open else { return }
        guard exchange != nil else { return close() }
        closeAfterResponse = true
    }
}
