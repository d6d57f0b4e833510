import PitlaneCore

/// One request and its response on an HTTP/1.1 connection. Loop-confined but `outbound`.
final class HTTP1Exchange {
    let id: Int32
    var call: ServerCall?
    var inbound: BufferedStream<RPCRequestPart>?
    let outbound: StreamOutbound
    let cancellation = RPCCancellationHandle()
    var deadlineTimer: EventLoop.TimerID?
    /// Whether the connection may serve another request after this one.
    let keepAlive: Bool
    /// HTTP/1.1: bodies of unknown length go chunked; HTTP/1.0: they end at the close.
    let chunked: Bool
    var bodyBytes = 0
    /// Bytes of messages handed to the handler and not yet read.
    var unreadBytes = 0
    /// Reading stopped until the handler reads.
    var isReadPaused = false
    var requestComplete = false
    var responseComplete = false
    var headSent = false
    /// A head held back while the protocol produces a burst of actions: a response whose
    /// body is complete in the same burst goes out with `content-length`, not chunked.
    var heldHead: HTTPResponseHead?
    var heldBody: [BodyBytes] = []
    /// Whether the body is being written in chunks.
    var bodyIsChunked = false

    init(id: Int32, outboundHighWatermark: Int, keepAlive: Bool, chunked: Bool) {
        self.id = id
        outbound = StreamOutbound(highWatermark: outboundHighWatermark)
        self.keepAlive = keepAlive
        self.chunked = chunked
    }

    /// How a handler's writer names this exchange: its id (the connection serves one at a
    /// time, so a writer left from an earlier one matches nothing), its outbound queue, and
    /// the connection.
    struct Handle: ServerStreamHandle {
        let id: Int32
        let outbound: StreamOutbound
        let bound: LoopBound<HTTP1ServerConnection>
        var loop: EventLoop { bound.loop }
        var connection: HTTP1ServerConnection { bound.value }
    }
}

extension HTTP1ServerConnection {
    /// Reads the request's head with its protocol and hands the RPC to the transport, or
    /// answers at once.
    func startRPC(_ head: HTTPRequestHead, _ exchange: HTTP1Exchange) {
        var call: ServerCall
        switch WebCalls.start(head, overHTTP2: false, web: web, limits: callLimits) {
        case .respond(let response, let body):
            return ResponseAction.answer(response, body: body) { perform($0, on: exchange) }
        case .reject(let rejected, let status):
            exchange.call = rejected
            return answer(exchange) { call, perform in call.responseEnd(status, trailers: [:], perform) }
        case .serve(let accepted):
            call = accepted
        }
        let id = exchange.id
        let connection = LoopBound(self, loop: loop)
        let accepted = call.accept(
            stream: HTTP1Exchange.Handle(id: id, outbound: exchange.outbound, bound: connection), cancellation: exchange.cancellation,
            peer: peer, now: loop.now, maxMessageBytes: config.rpc.maxMessageBytes,
            messageRead: { bytes in connection.loop.execute { connection.value.messageRead(stream: id, bytes: bytes) } }
        )
        exchange.inbound = accepted.inbound
        exchange.call = call
        if let deadline = accepted.context.deadline {
            // The exchange's end cancels the timer; a handle left behind once it fired matches nothing.
            exchange.deadlineTimer = loop.scheduleTimer(at: deadline) { [cancellation = exchange.cancellation] in
                cancellation.expireDeadline()
            }
        }
        if !accept(accepted.rpc, accepted.context, exchange.cancellation) {
            answer(exchange) { call, perform in
                call.responseEnd(Status(code: .unavailable, message: "the server is shutting down"), trailers: [:], perform)
            }
        }
    }

    private func messageRead(stream id: Int32, bytes: Int) {
        guard let exchange, exchange.id == id else { return }
        exchange.unreadBytes -= bytes
        if exchange.isReadPaused, exchange.unreadBytes <= config.http2.streamWindowBytes {
            exchange.isReadPaused = false
            resumeReading()
        }
    }

    // MARK: The handler's parts

    func sendResponseHeaders(stream handle: HTTP1Exchange.Handle, metadata: Metadata) {
        loop.assertInEventLoop()
        guard let exchange = current(handle.id) else { return }
        answer(exchange) { call, perform in call.responseHead(metadata, perform) }
    }

    func queueMessage(stream handle: HTTP1Exchange.Handle, encoded: BodyBytes) {
        loop.assertInEventLoop()
        guard let exchange = current(handle.id) else { return }
        answer(exchange) { call, perform in call.responseMessage(encoded, perform) }
    }

    func sendStatus(stream handle: HTTP1Exchange.Handle, status: Status, trailers: Metadata) {
        loop.assertInEventLoop()
        guard let exchange = current(handle.id) else { return }
        answer(exchange) { call, perform in call.responseEnd(status, trailers: trailers, perform) }
    }

    /// The handler ended without a status: the response cannot be completed.
    func abandon(stream handle: HTTP1Exchange.Handle) {
        loop.assertInEventLoop()
        guard current(handle.id) != nil else { return }
        close()
    }

    private func current(_ id: Int32) -> HTTP1Exchange? {
        guard let exchange, exchange.id == id, exchange.call != nil, !exchange.responseComplete else { return nil }
        return exchange
    }

    /// Runs one step of the call's protocol and writes what it produced.
    private func answer(_ exchange: HTTP1Exchange, _ step: (inout ServerCall, (ResponseAction) -> Void) -> Void) {
        guard var call = exchange.call else { return }
        exchange.call = nil
        step(&call) { perform($0, on: exchange) }
        exchange.call = call
        releaseHeldHead(of: exchange)
        flush()
    }

    // MARK: Framing

    func perform(_ action: ResponseAction, on exchange: HTTP1Exchange) {
        switch action {
        case .head(let head, let endsStream):
            if endsStream {
                writeHead(head, framing: .length(0), of: exchange)
                completeResponse(of: exchange)
            } else {
                exchange.heldHead = head
            }
        case .body(let bytes):
            if exchange.heldHead != nil {
                exchange.heldBody.append(bytes)
            } else {
                output.appendBody(bytes, chunked: exchange.bodyIsChunked, outbound: exchange.outbound)
            }
        case .end:
            if let head = exchange.heldHead {
                exchange.heldHead = nil
                writeHead(head, framing: .length(exchange.heldBody.reduce(0) { $0 + $1.count }), of: exchange)
                for body in exchange.heldBody { output.appendBody(body, chunked: false, outbound: exchange.outbound) }
                exchange.heldBody = []
            } else if exchange.bodyIsChunked {
                output.appendLastChunk()
            }
            completeResponse(of: exchange)
        }
        flush()
    }

    /// A head still held after a burst starts a body of unknown length.
    private func releaseHeldHead(of exchange: HTTP1Exchange) {
        guard let head = exchange.heldHead else { return }
        exchange.heldHead = nil
        exchange.bodyIsChunked = exchange.chunked
        writeHead(head, framing: exchange.chunked ? .chunked : .untilClose, of: exchange)
        for body in exchange.heldBody { output.appendBody(body, chunked: exchange.bodyIsChunked, outbound: exchange.outbound) }
        exchange.heldBody = []
    }

    private func writeHead(_ head: HTTPResponseHead, framing: HTTP1Output.BodyFraming, of exchange: HTTP1Exchange) {
        exchange.headSent = true
        var closing = !exchange.keepAlive || closeAfterResponse
        if case .untilClose = framing { closing = true }
        if closing { closeAfterResponse = true }
        output.appendHead(head, framing: framing, closing: closing)
    }

    private func completeResponse(of exchange: HTTP1Exchange) {
        exchange.responseComplete = true
        if let timer = exchange.deadlineTimer { _ = loop.cancelTimer(timer) }
        exchange.deadlineTimer = nil
        // A body still arriving is read and dropped (up to the body limit) before the next request.
        if exchange.requestComplete { finishExchange() }
    }

    /// Ends a call that did not complete: its handler is cancelled and its writer fails.
    func end(_ exchange: HTTP1Exchange, error: RPCError) {
        if let timer = exchange.deadlineTimer { _ = loop.cancelTimer(timer) }
        exchange.deadlineTimer = nil
        exchange.outbound.close(error)
        guard !exchange.responseComplete else { return }
        exchange.inbound?.finish(throwing: error)
        exchange.cancellation.cancel()
    }
}
