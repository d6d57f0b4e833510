import CNGHTTP2
import PitlaneCore

/// One accepted HTTP/2 connection: its socket, its TLS engine (unless plaintext), its nghttp2
/// session and its streams, all on one event loop.
///
/// Loop-owned: the transport holds it in a ``LoopBound``, and handler tasks reach it through
/// their stream's ``ServerStream/Handle``, on the loop.
final class HTTP2ServerConnection: HTTP2Connection, NGHTTP2SessionDelegate, ServerCallConnection {
    let socket: Socket
    let loop: EventLoop
    let config: HTTP2ServerTransport.Config
    let peer: String
    let session: NGHTTP2Session
    private let callLimits: ServerCallLimits
    private let accept: RPCAcceptor
    private let onClose: @Sendable (any ServerConnection) -> Void
    private var streams = StreamTable<ServerStream>()
    let pump: SessionPump
    /// Whether a flush may run now, and whether one is deferred; see ``FlushGate``.
    let flushGate = FlushGate()
    /// The pending idle check, if `config.connection.maxIdle` is set.
    private var idleTimer: EventLoop.TimerID?
    /// The preface and connection-age timers. Every timer holds the connection strongly and
    /// `release` cancels them all: a weak reference would give the connection a side table,
    /// and every retain and release of it (one per response part) would take the slow path.
    private var prefaceTimer: EventLoop.TimerID?
    private var ageTimer: EventLoop.TimerID?
    /// The connection's life and policy: preface, ping strikes, rapid-reset budget, idle and
    /// age, the graceful drain, and the lingering close.
    private var management: ServerConnectionStateMachine

    private var isClosed: Bool { management.phase == .closed }

    /// - Parameter tls: the connection's TLS state, nil for plaintext; the handshake runs
    ///   before any HTTP/2 byte moves, within `config.connection.prefaceTimeout`.
    init(
        socket: Socket, loop: EventLoop, config: HTTP2ServerTransport.Config, peer: String, tls: TLSEngine?,
        accept: @escaping RPCAcceptor, onClose: @escaping @Sendable (any ServerConnection) -> Void
    ) {
        self.socket = socket
        pump = SessionPump(tls: tls)
        self.loop = loop
        self.config = config
        self.peer = peer
        self.accept = accept
        self.onClose = onClose
        session = NGHTTP2Session(isServer: true, maxHeaderListBytes: config.http2.maxHeaderListBytes)
        callLimits = config.callLimits
        management = ServerConnectionStateMachine(limits: .init(config), now: loop.now)
        session.delegate = self
    }

    /// Registers the socket and sends the server's SETTINGS; on the loop.
    func start() throws {
        armDeferredFlush()
        session.submitSettings([
            (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, UInt32(config.http2.maxConcurrentStreams)),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, UInt32(config.http2.streamWindowBytes)),
            (NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(config.http2.maxHeaderListBytes)),
        ])
        session.setConnectionWindow(config.http2.connectionWindowBytes)
        try loop.register(socket.fileDescriptor, handler: self, readable: true, writable: false)
        prefaceTimer = loop.scheduleTimer(after: config.connection.prefaceTimeout) { [self] in
            prefaceTimer = nil
            perform(management.prefaceTimeoutPassed())
        }
        if let idle = config.connection.maxIdle { checkIdle(after: idle) }
        if let age = config.connection.maxAge {
            ageTimer = loop.scheduleTimer(after: age) { [self] in
                ageTimer = nil
                perform(management.ageReached())
                guard !isClosed else { return }
                ageTimer = loop.scheduleTimer(after: config.connection.maxAgeGrace) { [self] in
                    ageTimer = nil
                    perform(management.ageGraceEnded())
                }
            }
        }
        flush()
    }

    /// ``start()``, then the bytes a ``ProtocolSniffer`` read to tell HTTP/2 from HTTP/1.1.
    func start(receivedAlready bytes: [UInt8]) throws {
        try start()
        guard !bytes.isEmpty else { return }
        flushGate.beginReceiving()
        let failed = (try? bytes.withUnsafeBytes { try session.receive($0) }) == nil
        flushGate.endReceiving()
        if failed { management.protocolFailed() }
        flush()
    }

    /// Goes away once the connection has been without streams for `config.connection.maxIdle`. One
    /// check is pending at a time: arming it again replaces the previous one.
    private func checkIdle(after delay: Duration) {
        if let idleTimer { _ = loop.cancelTimer(idleTimer) }
        idleTimer = loop.scheduleTimer(after: delay) { [self] in
            guard !self.isClosed else { return }
            self.idleTimer = nil
            let (action, again) = self.management.idleCheck(at: self.loop.now)
            self.perform(action)
            if let again { self.checkIdle(after: again) }
        }
    }

    /// Carries out what the state machine decided.
    private func perform(_ action: ServerConnectionStateMachine.Action) {
        switch action {
        case .none:
            return
        case .sendDrainNotice:
            session.submitShutdownNotice()
            session.submitPing()
            // A client that never answers the PING gets the final GOAWAY anyway.
            loop.scheduleTimer(after: Self.drainNoticePatience) { [weak self] in
                guard let self else { return }
                self.perform(self.management.drainNoticeAcknowledged())
            }
            flush()
        case .sendGoAway(let errorCode, let debug):
            session.submitGoAway(errorCode: errorCode, debug: debug)
            scheduleFlush()
        case .linger:
            linger()
        case .close(let lingered):
            release(lingered: lingered)
        }
    }

    /// What a stream's handler and writer see when the stream closes without an error code
    /// before they finish.
    static let streamClosed = RPCError(code: .cancelled, message: "the stream closed before the RPC finished")

    /// How long the drain notice's PING may go unanswered before the final GOAWAY.
    static let drainNoticePatience: Duration = .seconds(10)

    // MARK: Socket events

    func readable() {
        guard management.isExchangingFrames else { return discardWhileLingering() }
        switch receive() {
        case .drained:
            flush()
        case .handshakeCompleted:
            // The server's SETTINGS go out; the client's preface may wait in the engine already.
            flush()
            readable()
        case .endOfStream:
            close()
        case .failed(let error):
            if let failure = error as? TLSError, failure.isHandshakeFailure { config.connection.onTLSHandshakeFailure?(peer, failure) }
            if error is SocketError { return close() }
            // A protocol error leaves a GOAWAY (TLS: an alert) queued that says why: send it, then close.
            management.protocolFailed()
            flush()
        }
    }

    func writable() { flush() }

    func errorOrHangUp() { close() }

    var writesFrames: Bool { management.isExchangingFrames }

    /// Everything written: a draining connection whose session is done lingers.
    func wrote() {
        if !pump.hasUnsentBytes { perform(management.outputWritten(sessionWantsIO: session.isActive)) }
    }

    func writeFailed(_ error: any Error) { close() }

    /// The last word is written: end every RPC, stop writing, and read and discard what the
    /// client still sends until it closes or the linger time passes, so that its late bytes
    /// do not make the kernel answer with a reset that destroys what was sent.
    private func linger() {
        endStreams()
        if let idleTimer { _ = loop.cancelTimer(idleTimer) }
        idleTimer = nil
        pump.sendCloseNotify(to: socket)
        do {
            try socket.shutdownWrite()
            try loop.setInterest(socket.fileDescriptor, readable: true, writable: false)
        } catch {
            return close()
        }
        loop.scheduleTimer(after: ServerConnectionStateMachine.lingerTime) { [weak self] in
            guard let self else { return }
            self.perform(self.management.lingerEnded())
        }
    }

    private func discardWhileLingering() {
        guard management.phase == .lingering else { return }
        while true {
            let count: Int?
            do { count = try socket.read(into: loop.readBuffer) } catch { break }
            guard let count else { return }  // nothing more for now
            if count == 0 { break }  // the client closed its side
        }
        perform(management.lingerEnded())
    }

    /// Closes the socket; every open RPC is cancelled.
    func close() {
        guard !isClosed else { return }
        let lingered = management.phase == .lingering
        management.closed()
        release(lingered: lingered)
    }

    /// The socket, timers and streams go; the state machine is `closed` already.
    private func release(lingered: Bool) {
        for timer in [idleTimer, prefaceTimer, ageTimer] {
            if let timer { _ = loop.cancelTimer(timer) }
        }
        (idleTimer, prefaceTimer, ageTimer) = (nil, nil, nil)
        disarmDeferredFlush()
        loop.deregister(socket.fileDescriptor)
        if !lingered { pump.sendCloseNotify(to: socket) }
        socket.close()
        endStreams()
        onClose(self)
    }

    private func endStreams() {
        let lost = RPCError(code: .unavailable, message: "the connection closed")
        for stream in streams.values { end(stream, error: lost) }
        streams.removeAll()
    }

    /// Stops accepting streams (GOAWAY in two steps); the connection closes when the last
    /// one ends.
    func drain() {
        loop.assertInEventLoop()
        guard !isClosed else { return }
        perform(management.beginDrain())
    }

    private func end(_ stream: ServerStream, error: RPCError) {
        if let timer = stream.deadlineTimer { loop.cancelTimer(timer) }
        stream.outbound.close(error)
        // Its writer's parts still on their way are dropped from here on.
        guard stream.machine.closed() else { return }
        stream.inbound?.finish(throwing: error)
        stream.cancellation.cancel()
    }

    // MARK: Session events

    func sessionBeganHeaders(stream id: Int32) {
        guard streams[id] == nil else { return }
        guard management.streamOpened() == .accept else {
            return session.resetStream(id, errorCode: NGHTTP2_REFUSED_STREAM.rawValue)
        }
        streams.insert(ServerStream(id: id, outboundHighWatermark: config.http2.streamWindowBytes), id: id)
    }

    func sessionReceivedHeader(name: String, value: String, stream id: Int32) {
        streams[id]?.machine.receivedHeader(name: name, value: value)
    }

    func sessionHeaderListTooLarge(stream id: Int32, limit: Int) {
        streams[id]?.machine.headerListTooLarge(limit: limit)
    }

    func sessionEndedHeaders(stream id: Int32, endStream: Bool) {
        guard let stream = streams[id] else { return }
        switch stream.machine.headersEnded() {
        case .start(let head):
            startRPC(stream, head)
        case .refuse(let limit):
            // Answered as gRPC, the protocol of nearly every client that sends such headers.
            let status = Status(code: .resourceExhausted, message: "the request's header list exceeds the server's limit of \(limit) bytes")
            let headers = [("content-type", "application/grpc")] + GRPCServerWire.statusFields(status)
            return perform(.head(HTTPResponseHead(status: 200, headers: headers), endsStream: true), on: stream)
        case .none:
            break
        }
        if endStream { requestEnded(stream) }
    }

    func sessionReceivedData(_ data: UnsafeRawBufferPointer, stream id: Int32) {
        guard let stream = streams[id], let inbound = stream.inbound else {
            // No one will read these bytes: give their window back at once.
            session.consume(stream: id, bytes: data.count)
            return
        }
        guard var call = stream.call, !call.body.returnsWindowOnReceipt else {
            session.consume(stream: id, bytes: data.count)
            return receive(data, into: stream, inbound)
        }
        stream.call = nil  // no second reference: the body's buffer grows in place
        stream.window.received(data.count)
        do {
            try call.appendBody(data)
            while let message = try call.nextMessage() {
                stream.window.completed(messageOfSize: message.bytes.count + 5)
                let part = try call.requestPart(message, limit: config.rpc.maxMessageBytes, counting: stream.outbound)
                withCall(&call, in: stream) { inbound.yield(part) }
            }
        } catch {
            withCall(&call, in: stream) { inbound.finish(throwing: error) }
        }
        stream.call = call
        let early = stream.window.returnPartial(buffered: call.body.bufferedBytes)
        if early > 0 { session.consume(stream: id, bytes: early) }
    }

    /// Runs `deliver` (a request part, or the request's failure, handed to the handler) with
    /// the call back in its stream: a handler that takes its requests as they are delivered
    /// may answer at once, from here (a response written inline, or the status), and what
    /// that changes in the call is kept.
    private func withCall(_ call: inout ServerCall, in stream: ServerStream, _ deliver: () -> Void) {
        stream.call = call
        deliver()
        call = stream.call ?? call
        stream.call = nil  // the body's buffer has one reference again
    }

    /// Body bytes whose window went back on receipt (gRPC-Web text).
    private func receive(_ data: UnsafeRawBufferPointer, into stream: ServerStream, _ inbound: BufferedStream<RPCRequestPart>) {
        guard var call = stream.call else { return }
        stream.call = nil
        do {
            try call.appendBody(data)
            while let message = try call.nextMessage() {
                let part = try call.requestPart(message, limit: config.rpc.maxMessageBytes, counting: stream.outbound)
                withCall(&call, in: stream) { inbound.yield(part) }
            }
        } catch {
            withCall(&call, in: stream) { inbound.finish(throwing: error) }
        }
        stream.call = call
    }

    func sessionEndedData(stream id: Int32) {
        guard let stream = streams[id] else { return }
        requestEnded(stream)
    }

    /// END_STREAM on the request: a whole-body message (Connect unary) is complete now.
    private func requestEnded(_ stream: ServerStream) {
        guard var call = stream.call, let inbound = stream.inbound else { return }
        // The call goes back into the stream before the handler hears of the end: it may
        // answer from here.
        let last: RPCRequestPart?
        do {
            last = try call.finishBody().map { message in
                stream.window.completed(messageOfSize: message.count)
                return try call.requestPart((false, message), limit: config.rpc.maxMessageBytes, counting: stream.outbound)
            }
        } catch {
            stream.call = call
            return inbound.finish(throwing: error)
        }
        stream.call = call
        if let last { inbound.yield(last) }
        inbound.finish()
    }

    func sessionClosedStream(_ id: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        returnConnectionWindow(stream.window.outstanding)
        // Every stream ends here, most of them complete (no error): their error is never seen,
        // so it is not formatted.
        end(
            stream,
            error: errorCode == 0
                ? Self.streamClosed
                : RPCError(code: .cancelled, message: "the client reset the stream (HTTP/2 error \(errorCode))"))
        // The last stream of a draining connection: it closes once this stream's last frames are out.
        management.streamClosed(at: loop.now)
        if streams.isEmpty, let idle = config.connection.maxIdle, !management.isDraining { checkIdle(after: idle) }
        scheduleFlush()
    }

    func sessionReceivedGoAway(lastStreamID: Int32, errorCode: UInt32) {}

    func sessionReceivedSettings() {
        management.settingsReceived()
    }

    /// gRPC's ping policy; see ``ServerConnectionStateMachine``. An ACK is the answer to
    /// the drain notice's PING, the only one the server sends.
    func sessionReceivedPing(isAck: Bool) {
        perform(isAck ? management.drainNoticeAcknowledged() : management.pingReceived(at: loop.now))
    }

    /// Rapid-reset protection; see ``ServerConnectionStateMachine``.
    func sessionReceivedReset(stream id: Int32) {
        perform(management.resetReceived(at: loop.now))
    }

    func sessionReadData(
        stream id: Int32, source: UnsafeMutableRawPointer?, into buffer: UnsafeMutableRawBufferPointer
    ) -> NGHTTP2Session.DataChunk {
        // The stream itself, as `perform` gave it with the response's headers: it is in
        // `streams`, which keeps it alive, until nghttp2 closes it and reads no more.
        guard let source else { return .bytes(count: 0, end: true, trailers: false) }
        let stream = Unmanaged<ServerStream>.fromOpaque(source).takeUnretainedValue()
        let (count, step) = stream.machine.readData(into: buffer)
        stream.outbound.sent(count)
        if count > 0 { management.framesSent() }
        return chunk(count: count, step, stream: id)
    }

    // MARK: RPCs

    /// Reads a request's head with the protocol it speaks (gRPC, or what the transport's
    /// protocol handler serves) and hands the RPC to the transport, or answers at once.
    private func startRPC(_ stream: ServerStream, _ head: HTTPRequestHead) {
        let start =
            GRPCServerWire.isGRPC(head)
            ? GRPCServerWire.start(head, limits: callLimits)
            : config.protocolHandler?.start(head, limits: callLimits) ?? GRPCServerWire.refuse(head)
        var call: ServerCall
        switch start {
        case .respond(let response, let body):
            return ResponseAction.answer(response, body: body) { perform($0, on: stream) }
        case .reject(let rejected, let status):
            stream.call = rejected
            return sendStatus(stream, status, trailers: [:])
        case .serve(let accepted):
            call = accepted
        }
        let id = stream.id
        let connection = LoopBound(self, loop: loop)
        let accepted = call.accept(
            stream: ServerStream.Handle(stream: stream, connection: self), cancellation: stream.cancellation, peer: peer, now: loop.now,
            maxMessageBytes: config.rpc.maxMessageBytes,
            messageRead: { _ in connection.loop.execute { connection.value.messageRead(stream: id) } }
        )
        stream.inbound = accepted.inbound
        stream.call = call
        if let deadline = accepted.context.deadline {
            // Every way a stream ends cancels its timer (`end`), so holding the connection
            // here keeps it no longer than its streams; a weak reference to the stream would
            // give it a side table, which slows every later retain and release of it.
            stream.deadlineTimer = loop.scheduleTimer(at: deadline) { [self] in
                guard let stream = streams[id] else { return }
                stream.deadlineTimer = nil
                expireDeadline(of: stream)
            }
        }
        if !accept(accepted.rpc, accepted.context, stream.cancellation) {
            session.resetStream(id, errorCode: NGHTTP2_REFUSED_STREAM.rawValue)
        }
    }

    /// The client's deadline passed: the handler is cancelled and its status
    /// (DEADLINE_EXCEEDED) follows what it queued. Response data the client's window still
    /// holds back would keep the stream open after the client gave up, so such a stream is
    /// reset instead, which frees it now.
    private func expireDeadline(of stream: ServerStream) {
        stream.cancellation.expireDeadline()
        guard streams[stream.id] === stream, stream.machine.deadlineExpired() else { return }
        session.resetStream(stream.id, errorCode: NGHTTP2_CANCEL.rawValue)
        flush()
    }

    private func messageRead(stream id: Int32) {
        guard let stream = streams[id] else { return }
        returnWindow(stream.window.read(), stream: id)
    }

    /// Sends what the call's protocol made of a response part.
    private func perform(_ action: ResponseAction, on stream: ServerStream) {
        do {
            switch action {
            case .head(let head, let endsStream):
                try stream.machine.responseHeadSent(endsStream: endsStream)
                let id = stream.id
                var headers = [(name: ":status", value: String(head.status))]
                headers += head.headers
                let source = Unmanaged.passUnretained(stream).toOpaque()
                submit(id) { try $0.submitResponse(stream: id, headers: headers, hasBody: !endsStream, source: source) }
                management.framesSent()
            case .body(let bytes):
                if try stream.machine.responseBody(bytes) { session.resumeData(stream: stream.id) }
            case .end(let trailers):
                if try stream.machine.responseEnded(trailers: trailers) { session.resumeData(stream: stream.id) }
            }
        } catch {
            logToStandardError("pitlane: resetting stream \(stream.id) from \(peer): \(error)")
            session.resetStream(stream.id, errorCode: NGHTTP2_INTERNAL_ERROR.rawValue)
        }
    }

    /// What nghttp2 is told after a read of `count` bytes for stream `id`: the response's
    /// trailers are submitted when its body ends with them.
    private func chunk(count: Int, _ step: OutgoingBody.Step, stream id: Int32) -> NGHTTP2Session.DataChunk {
        switch step {
        case .more:
            return .bytes(count: count, end: false, trailers: false)
        case .deferred:
            return .deferred
        case .end(.endStream):
            return .bytes(count: count, end: true, trailers: false)
        case .end(.trailers(let trailers)):
            do {
                try session.submitTrailer(stream: id, headers: trailers)
                return .bytes(count: count, end: true, trailers: true)
            } catch {
                // The stream ends without a status, which clients report as INTERNAL.
                logToStandardError("pitlane: cannot send the trailers of stream \(id) to \(peer): \(error)")
                return .bytes(count: count, end: true, trailers: false)
            }
        }
    }

    // A writer's parts come with the stream itself: no table lookup per part (with many
    // streams written at once, as a race tick to every follower, the lookups missed the
    // cache). A stream that ended is `.closing` (`end`), and its parts are dropped.

    func sendResponseHeaders(stream handle: ServerStream.Handle, metadata: Metadata) {
        loop.assertInEventLoop()
        let stream = handle.stream
        guard stream.machine.isOpen else { return }
        stream.call?.responseHead(metadata) { perform($0, on: stream) }
        scheduleFlush()
    }

    func queueMessage(stream handle: ServerStream.Handle, encoded: BodyBytes) {
        loop.assertInEventLoop()
        let stream = handle.stream
        guard stream.machine.isOpen else { return }
        stream.call?.responseMessage(encoded) { perform($0, on: stream) }
        scheduleFlush()
    }

    func sendStatus(stream handle: ServerStream.Handle, status: Status, trailers: Metadata) {
        loop.assertInEventLoop()
        sendStatus(handle.stream, status, trailers: trailers)
    }

    private func sendStatus(_ stream: ServerStream, _ status: Status, trailers: Metadata) {
        guard stream.machine.isOpen else { return }
        stream.call?.responseEnd(status, trailers: trailers) { perform($0, on: stream) }
        scheduleFlush()
    }

    /// Runs a submit for stream `id`; if nghttp2 refuses it (headers it cannot encode, a
    /// stream it no longer knows), the stream is reset rather than left without an answer.
    private func submit(_ id: Int32, _ body: (NGHTTP2Session) throws -> Void) {
        do {
            try body(session)
        } catch {
            logToStandardError("pitlane: resetting stream \(id) from \(peer): \(error)")
            // The head never left, whatever the stream's state says: reset it.
            _ = streams[id]?.machine.resetByServer()
            session.resetStream(id, errorCode: NGHTTP2_INTERNAL_ERROR.rawValue)
        }
    }

    /// The handler ended without a status (it was cancelled): reset the stream.
    func abandon(stream handle: ServerStream.Handle) {
        loop.assertInEventLoop()
        let stream = handle.stream
        guard stream.machine.resetByServer() else { return }
        session.resetStream(stream.id, errorCode: NGHTTP2_CANCEL.rawValue)
        flush()
    }
}
