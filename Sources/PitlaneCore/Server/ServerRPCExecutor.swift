/// Runs one server RPC: decodes requests, runs interceptors and the handler under the
/// deadline, writes metadata, responses and the status.
///
/// Inlinable, as the router's registration is: generated services register concrete message
/// types, and the executor is compiled for them in the service's module. Unspecialized, every
/// generic value in these async functions was allocated on the task at run time and its type
/// metadata looked up per call.
@usableFromInline
enum ServerRPCExecutor {
    /// Runs an RPC in streaming form: requests are decoded as the handler reads them, through
    /// the interceptors, and responses encoded as it writes them.
    @inlinable
    nonisolated(nonsending) static func run<Input: Sendable, Output: Sendable>(
        metadata: Metadata, inbound: RPCAsyncSequence<RPCRequestPart, any Error>,
        outbound: RPCWriter<RPCResponsePart>.Closable, context: ServerContext, settings: ServerRPCSettings,
        wireCounts: (any MessageWireCounts)?, observedMethod: MethodDescriptor?,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async {
        let call = CallRecord(settings: settings, wireCounts: wireCounts, method: observedMethod)
        let limit = settings.maxRequestMessageBytes
        let tally = call.tally
        let compression = context.messageCompression
        // Each message read straight from the transport's stream: the fewer async levels
        // under the handler while it waits, the less an idle stream holds.
        let messages: RPCAsyncSequence<Input, any Error> = if case .stream(let parts)? = inbound.source {
            RPCAsyncSequence(parts: parts) {
                try decode($0, limit: limit, tally: tally, compression: compression, deserializer: deserializer)
            }
        } else {
            RPCAsyncSequence(wrapping: MappedSequence(base: inbound) { part -> Input? in
                try decode(part, limit: limit, tally: tally, compression: compression, deserializer: deserializer)
            })
        }
        let request = StreamingServerRequest(metadata: metadata, messages: messages)
        let result = await respond(to: request, context: context, interceptors: settings.interceptors, handler: handler,
                                   serializer: serializer, outbound: outbound, tally: tally)
        await call.finish(result, context: context, outbound: outbound)
    }

    /// Runs a unary RPC with no interceptors: its one request is read straight from the
    /// stream and its one response written straight to it. Nothing generic in the message
    /// types is built per call beyond the request and response themselves (the streaming
    /// form's sequence, writer and response adapters cost a type-metadata lookup each).
    @inlinable
    nonisolated(nonsending) static func runUnary<Input: Sendable, Output: Sendable>(
        metadata: Metadata, inbound: RPCAsyncSequence<RPCRequestPart, any Error>,
        outbound: RPCWriter<RPCResponsePart>.Closable, context: ServerContext, settings: ServerRPCSettings,
        wireCounts: (any MessageWireCounts)?, observedMethod: MethodDescriptor?,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (ServerRequest<Input>, ServerContext) async throws -> ServerResponse<Output>
    ) async {
        let call = CallRecord(settings: settings, wireCounts: wireCounts, method: observedMethod)
        let compression = context.messageCompression
        let limit = settings.maxRequestMessageBytes
        let result: (Status, Metadata)
        do {
            var received: Input?
            for try await part in inbound {
                let message = try decode(part, limit: limit, tally: call.tally, compression: compression, deserializer: deserializer)
                guard received == nil else {
                    throw RPCError(code: .internal, message: "the client sent more than one request message")
                }
                received = message
            }
            guard let received else { throw RPCError(code: .internal, message: "the client sent no request message") }
            let response = try await handler(ServerRequest(metadata: metadata, message: received), context)
            let contents = try response.accepted.get()
            let bytes = try serializer.serialize(contents.message)
            call.tally?.sent(bytes.count)
            try await outbound.write(.metadata(contents.metadata))
            try await outbound.write(.message(bytes, compression.flagsForWrite))
            result = (.ok, contents.trailingMetadata)
        } catch {
            let rpcError = RPCError.from(error)
            result = (rpcError.status, rpcError.metadata)
        }
        await call.finish(result, context: context, outbound: outbound)
    }

    /// One request message from its part: within the size limit, its compression recorded,
    /// deserialized.
    @inlinable
    static func decode<Input>(
        _ part: RPCRequestPart, limit: Int, tally: CallTally?, compression: MessageCompressionControl,
        deserializer: some MessageDeserializer<Input>
    ) throws -> Input {
        guard case .message(let bytes, let flags) = part else {
            throw RPCError(code: .internal, message: "the client sent metadata twice")
        }
        guard bytes.count <= limit else {
            throw RPCError(code: .resourceExhausted, message: "request message of \(bytes.count) bytes exceeds the limit of \(limit)")
        }
        tally?.received(bytes.count)
        compression.recordRead(flags)
        do {
            return try deserializer.deserialize(bytes)
        } catch let error as RPCError {
            throw error
        } catch {
            throw RPCError(code: .internal, message: "cannot deserialize the request: \(error)")
        }
    }

    /// Runs interceptors and the handler, writes metadata and messages; returns the status.
    /// Inlined into ``run``: one frame under the handler instead of two.
    @inlinable @inline(__always)
    nonisolated(nonsending) static func respond<Input: Sendable, Output: Sendable>(
        to request: StreamingServerRequest<Input>, context: ServerContext, interceptors: [any ServerInterceptor],
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>,
        serializer: some MessageSerializer<Output>, outbound: RPCWriter<RPCResponsePart>.Closable, tally: CallTally?
    ) async -> (Status, Metadata) {
        let response: StreamingServerResponse<Output>
        do {
            response = try await intercept(request, context, interceptors[...], handler)
        } catch {
            response = StreamingServerResponse(error: RPCError.from(error))
        }
        switch response.accepted {
        case .failure(let error):
            return (error.status, error.metadata)
        case .success(let contents):
            do {
                try await outbound.write(.metadata(contents.metadata))
                let writer = ResponseMessageWriter(target: outbound, serializer: serializer, tally: tally,
                                                   compression: context.messageCompression)
                let trailers = try await contents.producer(RPCWriter(wrapping: writer))
                return (.ok, trailers)
            } catch {
                let rpcError = RPCError.from(error)
                return (rpcError.status, rpcError.metadata)
            }
        }
    }

    @inlinable
    nonisolated(nonsending) static func intercept<Input: Sendable, Output: Sendable>(
        _ request: StreamingServerRequest<Input>, _ context: ServerContext,
        _ interceptors: ArraySlice<any ServerInterceptor>,
        _ handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        guard let first = interceptors.first else { return try await handler(request, context) }
        return try await first.intercept(request: request, context: context) { request, context in
            try await intercept(request, context, interceptors.dropFirst(), handler)
        }
    }
}

/// What every RPC shares around its handling: the observer's start and finish, the deadline,
/// and the status written at the end (or the stream failed, if cancelled). Two steps around
/// the handling, not a wrapper that takes it as a closure: every async level between the
/// transport and the handler keeps its frame on the RPC task's allocator for as long as the
/// handler waits, and an idle stream's memory is mostly that stack.
@usableFromInline
struct CallRecord {
    // Visible to inlined code, so that its layout is known there: otherwise looked up at run
    // time and allocated on the task.
    @usableFromInline let observer: (any ServerCallObserver)?
    @usableFromInline let method: MethodDescriptor?
    @usableFromInline let wireCounts: (any MessageWireCounts)?
    /// When the RPC started, as an offset (see ``MonotonicEpoch``).
    @usableFromInline let started: Duration?
    /// Sizes of serialized messages, counted when the observer needs sizes the transport
    /// does not count on the wire.
    @usableFromInline let tally: CallTally?

    /// Starts the RPC: tells the observer.
    @usableFromInline
    init(settings: ServerRPCSettings, wireCounts: (any MessageWireCounts)?, method: MethodDescriptor?) {
        observer = settings.observer
        self.method = method
        self.wireCounts = wireCounts
        started = observer == nil ? nil : MonotonicEpoch.offset(of: .now)
        tally = observer == nil || wireCounts != nil ? nil : CallTally()
        observer?.callStarted(method)
    }

    /// Ends the RPC once its handling returned `result`: past the context's deadline the
    /// transport cancelled the task (``RPCCancellationHandle/expireDeadline()``, from a timer
    /// it armed, so a deadline costs no task), and the status says so.
    @usableFromInline
    nonisolated(nonsending) func finish(
        _ result: (Status, Metadata), context: ServerContext, outbound: RPCWriter<RPCResponsePart>.Closable
    ) async {
        let deadlineExceeded = context.cancellation.isDeadlineExceeded
        let cancelled = !deadlineExceeded && Task.isCancelled
        let status: (Status, Metadata)
        if deadlineExceeded {
            status = (Status(code: .deadlineExceeded, message: "the deadline passed before the handler finished"), [:])
        } else if cancelled {
            status = (Status(code: .cancelled, message: "the RPC was cancelled"), [:])
        } else {
            status = result
        }
        // Waiters on `context.cancellation` are released once the handler is done.
        context.cancellation.raise()
        if let observer, let started {
            observer.callFinished(method, code: status.0.code, duration: MonotonicEpoch.offset(of: .now) - started,
                                  receivedBytes: wireCounts?.receivedMessageWireBytes ?? tally?.receivedBytes ?? 0,
                                  sentBytes: wireCounts?.sentMessageWireBytes ?? tally?.sentBytes ?? 0)
        }
        if cancelled {
            await outbound.finish(throwing: RPCError(code: .cancelled, message: "the RPC was cancelled"))
            return
        }
        try? await outbound.write(.status(status.0, status.1))
        await outbound.finish(throwing: nil)
    }
}

/// The handler's response writer: serializes each message and writes it to the stream as a
/// part. One value, so the handler's `RPCWriter` costs one allocation (a writer mapping
/// through closures cost four).
@usableFromInline
struct ResponseMessageWriter<Serializer: MessageSerializer>: RPCWriterProtocol where Serializer.Message: Sendable {
    @usableFromInline typealias Element = Serializer.Message
    let target: RPCWriter<RPCResponsePart>.Closable
    let serializer: Serializer
    let tally: CallTally?
    let compression: MessageCompressionControl

    @usableFromInline
    init(target: RPCWriter<RPCResponsePart>.Closable, serializer: Serializer, tally: CallTally?,
         compression: MessageCompressionControl) {
        self.target = target
        self.serializer = serializer
        self.tally = tally
        self.compression = compression
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
        tally?.sent(bytes.count)
        try await target.write(.message(bytes, compression.flagsForWrite))
    }

    /// Counted as sent only once queued: a message not queued now is written again.
    private func tryWrite(bytes: [UInt8]) -> Bool {
        guard target.tryWrite(.message(bytes, compression.flagsForWrite)) else { return false }
        tally?.sent(bytes.count)
        return true
    }
}
