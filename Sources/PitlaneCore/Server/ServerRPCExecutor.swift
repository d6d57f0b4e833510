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
        let observed = ObservedCall.start(observer: settings.observer, method: observedMethod, wireCounts: wireCounts)
        let limit = settings.maxRequestMessageBytes
        let compression = context.messageCompression
        // Each message read straight from the transport's stream: the fewer async levels
        // under the handler while it waits, the less an idle stream holds.
        let messages: RPCAsyncSequence<Input, any Error> = if case .stream(let parts)? = inbound.source {
            RPCAsyncSequence(parts: parts) {
                try decode($0, limit: limit, observed: observed, compression: compression, deserializer: deserializer)
            }
        } else {
            RPCAsyncSequence(wrapping: MappedSequence(base: inbound) { part -> Input? in
                try decode(part, limit: limit, observed: observed, compression: compression, deserializer: deserializer)
            })
        }
        // All the RPC's end needs, in one reference: the frames under a waiting handler are
        // most of what an idle stream holds, and each value kept across it is in them.
        let responder = ResponseMessageWriter(target: outbound, serializer: serializer, observed: observed,
                                              compression: compression, cancellation: context.cancellation)
        let request = StreamingServerRequest(metadata: metadata, messages: messages)
        let result = await respond(to: request, context: context, interceptors: settings.interceptors, handler: handler,
                                   responder: responder)
        await finish(result, observed: observed, cancellation: responder.cancellation, outbound: responder.target)
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
        let observed = ObservedCall.start(observer: settings.observer, method: observedMethod, wireCounts: wireCounts)
        let compression = context.messageCompression
        let cancellation = context.cancellation
        let limit = settings.maxRequestMessageBytes
        let result: (Status, Metadata)
        do {
            var received: Input?
            for try await part in inbound {
                let message = try decode(part, limit: limit, observed: observed, compression: compression, deserializer: deserializer)
                guard received == nil else {
                    throw RPCError(code: .internal, message: "the client sent more than one request message")
                }
                received = message
            }
            guard let received else { throw RPCError(code: .internal, message: "the client sent no request message") }
            let response = try await handler(ServerRequest(metadata: metadata, message: received), context)
            let contents = try response.accepted.get()
            let bytes = try serializer.serialize(contents.message)
            observed?.sent(bytes.count)
            try await outbound.write(.metadata(contents.metadata))
            try await outbound.write(.message(bytes, compression.flagsForWrite))
            result = (.ok, contents.trailingMetadata)
        } catch {
            let rpcError = RPCError.from(error)
            result = (rpcError.status, rpcError.metadata)
        }
        await finish(result, observed: observed, cancellation: cancellation, outbound: outbound)
    }

    /// One request message from its part: within the size limit, its compression recorded,
    /// deserialized.
    @inlinable
    static func decode<Input>(
        _ part: RPCRequestPart, limit: Int, observed: ObservedCall?, compression: MessageCompressionControl,
        deserializer: some MessageDeserializer<Input>
    ) throws -> Input {
        guard case .message(let bytes, let flags) = part else {
            throw RPCError(code: .internal, message: "the client sent metadata twice")
        }
        guard bytes.count <= limit else {
            throw RPCError(code: .resourceExhausted, message: "request message of \(bytes.count) bytes exceeds the limit of \(limit)")
        }
        observed?.received(bytes.count)
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
    nonisolated(nonsending) static func respond<Input: Sendable, Serializer: MessageSerializer>(
        to request: StreamingServerRequest<Input>, context: ServerContext, interceptors: [any ServerInterceptor],
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Serializer.Message>,
        responder: ResponseMessageWriter<Serializer>
    ) async -> (Status, Metadata) {
        let response: StreamingServerResponse<Serializer.Message>
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
                try await responder.target.write(.metadata(contents.metadata))
                let trailers = try await contents.producer(RPCWriter(wrapping: responder))
                return (.ok, trailers)
            } catch {
                let rpcError = RPCError.from(error)
                return (rpcError.status, rpcError.metadata)
            }
        }
    }

    /// Not inlined: the interceptors' temporaries would take room in the executor's frame,
    /// which lives for the whole RPC.
    @inlinable @inline(never)
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

extension ServerRPCExecutor {
    /// Ends an RPC once its handling returned `result`: past its deadline the transport
    /// cancelled the task (``RPCCancellationHandle/expireDeadline()``, from a timer it armed,
    /// so a deadline costs no task), and the status says so. Not inlined: its frame exists
    /// only once the handler has returned.
    @usableFromInline @inline(never)
    nonisolated(nonsending) static func finish(
        _ result: (Status, Metadata), observed: ObservedCall?, cancellation: RPCCancellationHandle,
        outbound: RPCWriter<RPCResponsePart>.Closable
    ) async {
        let deadlineExceeded = cancellation.isDeadlineExceeded
        let cancelled = !deadlineExceeded && Task.isCancelled
        let status: (Status, Metadata)
        if deadlineExceeded {
            status = (Status(code: .deadlineExceeded, message: "the deadline passed before the handler finished"), [:])
        } else if cancelled {
            status = (Status(code: .cancelled, message: "the RPC was cancelled"), [:])
        } else {
            status = result
        }
        // Waiters on the cancellation handle are released once the handler is done.
        cancellation.raise()
        observed?.finished(status.0.code)
        if cancelled {
            await outbound.finish(throwing: RPCError(code: .cancelled, message: "the RPC was cancelled"))
            return
        }
        try? await outbound.write(.status(status.0, status.1))
        await outbound.finish(throwing: nil)
    }
}

/// The handler's response writer: serializes each message and writes it to the stream as a
/// part; it also holds what the RPC's end needs. One object, so the handler's `RPCWriter`
/// costs one allocation (a writer mapping through closures cost four) and the executor's frame
/// under the handler one reference.
@usableFromInline
final class ResponseMessageWriter<Serializer: MessageSerializer>: RPCWriterProtocol where Serializer.Message: Sendable {
    @usableFromInline typealias Element = Serializer.Message
    @usableFromInline let target: RPCWriter<RPCResponsePart>.Closable
    let serializer: Serializer
    let observed: ObservedCall?
    let compression: MessageCompressionControl
    @usableFromInline let cancellation: RPCCancellationHandle

    @usableFromInline
    init(target: RPCWriter<RPCResponsePart>.Closable, serializer: Serializer, observed: ObservedCall?,
         compression: MessageCompressionControl, cancellation: RPCCancellationHandle) {
        self.target = target
        self.serializer = serializer
        self.observed = observed
        self.compression = compression
        self.cancellation = cancellation
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
        try await target.write(.message(bytes, compression.flagsForWrite))
    }

    /// Counted as sent only once queued: a message not queued now is written again.
    private func tryWrite(bytes: [UInt8]) -> Bool {
        guard target.tryWrite(.message(bytes, compression.flagsForWrite)) else { return false }
        observed?.sent(bytes.count)
        return true
    }
}
