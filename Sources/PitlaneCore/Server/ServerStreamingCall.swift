import Synchronization

/// One RPC in streaming form while its handler runs: the request and context the handler is
/// called with, and the handler's response writer, which serializes each message and writes
/// it to the stream as a part. One object, made before the handler runs, so that the frame
/// the executor keeps under the handler for the whole RPC holds one reference, and the
/// handler's `RPCWriter` costs one allocation (a writer mapping through closures cost four).
@usableFromInline
final class ServerStreamingCall<Input: Sendable, Serializer: MessageSerializer>: RPCWriterProtocol
where Serializer.Message: Sendable {
    @usableFromInline typealias Element = Serializer.Message
    @usableFromInline let request: StreamingServerRequest<Input>
    @usableFromInline let context: ServerContext
    @usableFromInline let target: RPCWriter<RPCResponsePart>.Closable
    @usableFromInline let observed: ObservedCall?
    let serializer: Serializer
    /// Whether the response went to a mailbox (``RPCWriter/deliver(from:ended:)``), and how
    /// far that and the handler are.
    @usableFromInline let handOff: Mutex<HandOff>

    /// A response handed to a mailbox and the handler's return, which come in either order:
    /// whichever is second ends the RPC.
    @usableFromInline enum HandOff: Sendable {
        /// The handler writes the response itself, so far.
        case none
        /// The handler writes the response itself: server interceptors see it, and to them
        /// a response ends when its producer returns.
        case intercepted
        /// The mailbox delivers, until it ends or the delivery is stopped (the RPC was
        /// cancelled, or the handler failed); `handlerResult` once the handler has returned,
        /// its task gone.
        case delivering(any StoppableDelivery, handlerResult: (Status, Metadata)?)
        /// The mailbox ended before the handler returned: cleanly (nil), or with this status.
        case delivered((Status, Metadata)?)
        case finished
    }

    @usableFromInline
    init(
        request: StreamingServerRequest<Input>, context: ServerContext, target: RPCWriter<RPCResponsePart>.Closable,
        observed: ObservedCall?, serializer: Serializer, intercepted: Bool
    ) {
        handOff = Mutex(intercepted ? .intercepted : .none)
        self.request = request
        self.context = context
        self.target = target
        self.observed = observed
        self.serializer = serializer
    }

    /// Reads the request's metadata and starts the RPC; nil when the stream failed first, the
    /// RPC then answered. Not inlined, so that its temporaries take no room in the executor's
    /// frame; specialized for the service's types, as the executor is.
    @inlinable @inline(never)
    nonisolated(nonsending) static func start(
        stream: ServerRPCStream, transportContext: ServerTransportContext, settings: ServerRPCSettings,
        observedMethod: ObservedMethod, deserializer: some MessageDeserializer<Input>, serializer: Serializer
    ) async -> ServerStreamingCall? {
        var iterator = stream.inbound.makeAsyncIterator()
        guard
            let metadata = await ServerRPCExecutor.readMetadata(
                &iterator, of: stream, transportContext,
                observer: settings.observer, method: observedMethod)
        else { return nil }
        let inbound = RPCAsyncSequence(remainderOf: iterator)
        let context = ServerContext(descriptor: stream.descriptor, transportContext: transportContext)
        let observed = ObservedCall.start(observer: settings.observer, method: observedMethod, wireCounts: stream.wireCounts)
        let checks = RequestMessageChecks(
            limit: settings.maxRequestMessageBytes, observed: observed,
            compression: context.messageCompression)
        // Each message read straight from the transport's stream: the fewer async levels
        // under the handler while it waits, the less an idle stream holds.
        let messages: RPCAsyncSequence<Input, any Error> =
            if case .stream(let parts) = inbound.source {
                RPCAsyncSequence(parts: parts, checks: checks) { part, checks in try checks.decode(part, with: deserializer) }
            } else {
                RPCAsyncSequence(
                    wrapping: MappedSequence(base: inbound) { part -> Input? in
                        try checks.decode(part, with: deserializer)
                    })
            }
        return ServerStreamingCall(
            request: StreamingServerRequest(metadata: metadata, messages: messages),
            context: context, target: stream.outbound, observed: observed, serializer: serializer,
            intercepted: !settings.interceptors.isEmpty)
    }

    @usableFromInline
    func write(_ message: Element) async throws {
        try await write(bytes: serializer.serialize(message))
    }

    @usableFromInline
    func write(serialized message: SerializedMessage<Element>) async throws {
        try await write(bytes: serializer.serialize(message))
    }

    /// A message that cannot be serialized is not queued: `write` then throws the error.
    @usableFromInline
    func tryWrite(_ message: Element) -> Bool {
        guard let bytes = try? serializer.serialize(message) else { return false }
        return tryWrite(bytes: bytes)
    }

    @usableFromInline
    func tryWrite(serialized message: SerializedMessage<Element>) -> Bool {
        guard let bytes = try? serializer.serialize(message) else { return false }
        return tryWrite(bytes: bytes)
    }

    private func write(bytes: [UInt8]) async throws {
        observed?.sent(bytes.count)
        try await target.write(.message(bytes, context.messageCompression.flagsForWrite))
    }

    /// Writes `mailbox`'s messages with no task, when the transport can: each offered one is
    /// queued by the producer, one the stream refuses waits in the mailbox until the stream
    /// has room, and the mailbox's end (or the RPC's) ends the other.
    @usableFromInline
    func handOff<Buffer: MailboxBuffer>(
        _ mailbox: Mailbox<Buffer>, ended: @escaping @Sendable (Mailbox<Buffer>.End) -> Void
    ) -> Bool where Buffer.Output == SerializedMessage<Element> {
        guard target.writesWithoutTask else { return false }
        let response = MailboxResponse(call: self, mailbox: mailbox, ended: ended)
        let started = handOff.withLock { state in
            guard case .none = state else { return false }
            state = .delivering(response, handlerResult: nil)
            return true
        }
        guard started else { return false }
        mailbox.deliver(to: response)
        context.cancellation.observe(self)
        return true
    }

    /// The RPC was cancelled, its deadline passed, or it ended: a mailbox still delivering
    /// stops.
    func rpcCancellationRaised() {
        let delivery = handOff.withLock { state -> (any StoppableDelivery)? in
            guard case .delivering(let delivery, _) = state else { return nil }
            return delivery
        }
        delivery?.stop(CancellationError())
    }

    /// The mailbox ended, cleanly or with `failure`: the RPC ends now if the handler has
    /// returned.
    fileprivate func deliveryEnded(_ failure: (Status, Metadata)?) {
        let result = handOff.withLock { state -> (Status, Metadata)? in
            guard case .delivering(_, let handlerResult) = state else { return nil }
            guard let handlerResult else {
                state = .delivered(failure)
                return nil
            }
            state = .finished
            return Self.combine(handlerResult, failure)
        }
        if let result {
            ServerRPCExecutor.finishWithoutTask(result, observed: observed, cancellation: context.cancellation, outbound: target)
        }
    }

    /// A message from the mailbox, queued if the stream takes it now; if not, the mailbox is
    /// told when the stream has room (or, for a message that cannot be serialized, stopped).
    fileprivate func tryWrite<Buffer: MailboxBuffer>(_ message: SerializedMessage<Element>, from mailbox: Mailbox<Buffer>) -> Bool {
        let bytes: [UInt8]
        do {
            bytes = try serializer.serialize(message)
        } catch {
            // From the loop: this runs under the mailbox's lock.
            _ = target.whenReady { mailbox.stopDelivery(error) }
            return false
        }
        if tryWrite(bytes: bytes) { return true }
        _ = target.whenReady { mailbox.resumeDelivery() }
        return false
    }

    /// The handler returned `result`: what the RPC ends with now, or nil when a mailbox still
    /// delivers its response (which then ends it; a failed handler ends the mailbox first).
    @usableFromInline
    func handlerReturned(_ result: (Status, Metadata)) -> (Status, Metadata)? {
        let (now, delivery) = handOff.withLock { state -> ((Status, Metadata)?, (any StoppableDelivery)?) in
            switch state {
            case .none, .intercepted, .finished:
                return (result, nil)
            case .delivering(let delivery, _):
                state = .delivering(delivery, handlerResult: result)
                return (nil, result.0.code == .ok ? nil : delivery)
            case .delivered(let failure):
                state = .finished
                return (Self.combine(result, failure), nil)
            }
        }
        if let delivery, let error = RPCError(status: result.0, metadata: result.1) { delivery.stop(error) }
        return now
    }

    /// A handler's result and its mailbox's end: the handler's failure, else the mailbox's,
    /// else the handler's status and trailers.
    private static func combine(_ handler: (Status, Metadata), _ delivery: (Status, Metadata)?) -> (Status, Metadata) {
        handler.0.code == .ok ? delivery ?? handler : handler
    }

    /// Counted as sent only once queued: a message not queued now is written again.
    private func tryWrite(bytes: [UInt8]) -> Bool {
        guard target.tryWrite(.message(bytes, context.messageCompression.flagsForWrite)) else { return false }
        observed?.sent(bytes.count)
        return true
    }
}

extension ServerStreamingCall: RPCCancellationObserver {}

/// A response a mailbox delivers, as its call stops it.
@usableFromInline
protocol StoppableDelivery: AnyObject, Sendable {
    /// Ends the delivery now, dropping what waits: the RPC ended first.
    func stop(_ error: any Error)
}

/// A call's response delivered by a mailbox: the mailbox's consumer, which queues each
/// message on the call's stream, and what the call stops. One object per handed-off RPC
/// (an idle follower's whole cost beyond its stream and subscription).
final class MailboxResponse<Input: Sendable, Serializer: MessageSerializer, Buffer: MailboxBuffer>: MailboxConsumer, StoppableDelivery
where Serializer.Message: Sendable, Buffer.Output == SerializedMessage<Serializer.Message> {
    let call: ServerStreamingCall<Input, Serializer>
    let mailbox: Mailbox<Buffer>
    let ended: @Sendable (Mailbox<Buffer>.End) -> Void

    init(call: ServerStreamingCall<Input, Serializer>, mailbox: Mailbox<Buffer>, ended: @escaping @Sendable (Mailbox<Buffer>.End) -> Void) {
        self.call = call
        self.mailbox = mailbox
        self.ended = ended
    }

    func take(_ message: SerializedMessage<Serializer.Message>) -> Bool {
        call.tryWrite(message, from: mailbox)
    }

    func mailboxEnded(_ end: Mailbox<Buffer>.End) {
        ended(end)
        switch end {
        case .finished: call.deliveryEnded(nil)
        case .failed(let error): call.deliveryEnded(RPCError.statusAndMetadata(of: error))
        }
    }

    func stop(_ error: any Error) {
        mailbox.stopDelivery(error)
    }
}
