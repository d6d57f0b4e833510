/// Runs one server RPC: decodes requests, runs interceptors and the handler under the
/// deadline, writes metadata, responses and the status.
enum ServerRPCExecutor {
    /// Runs an RPC in streaming form: requests are decoded as the handler reads them, through
    /// the interceptors, and responses encoded as it writes them.
    nonisolated(nonsending) static func run<Input: Sendable, Output: Sendable>(
        metadata: Metadata, inbound: RPCAsyncSequence<RPCRequestPart, any Error>,
        outbound: RPCWriter<RPCResponsePart>.Closable, context: ServerContext, settings: ServerRPCSettings,
        wireCounts: (any MessageWireCounts)?, observedMethod: MethodDescriptor?,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async {
        let limit = settings.maxRequestMessageBytes
        let interceptors = settings.interceptors
        await serve(outbound: outbound, context: context, settings: settings, wireCounts: wireCounts,
                    observedMethod: observedMethod) { tally in
            let compression = context.messageCompression
            let messages = MappedSequence(base: inbound) { part -> Input? in
                try decode(part, limit: limit, tally: tally, compression: compression, deserializer: deserializer)
            }
            let request = StreamingServerRequest(metadata: metadata, messages: RPCAsyncSequence(wrapping: messages))
            return await respond(to: request, context: context, interceptors: interceptors, handler: handler,
                                 serializer: serializer, outbound: outbound, tally: tally)
        }
    }

    /// Runs a unary RPC with no interceptors: its one request is read straight from the
    /// stream and its one response written straight to it. Nothing generic in the message
    /// types is built per call beyond the request and response themselves (the streaming
    /// form's sequence, writer and response adapters cost a type-metadata lookup each).
    nonisolated(nonsending) static func runUnary<Input: Sendable, Output: Sendable>(
        metadata: Metadata, inbound: RPCAsyncSequence<RPCRequestPart, any Error>,
        outbound: RPCWriter<RPCResponsePart>.Closable, context: ServerContext, settings: ServerRPCSettings,
        wireCounts: (any MessageWireCounts)?, observedMethod: MethodDescriptor?,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (ServerRequest<Input>, ServerContext) async throws -> ServerResponse<Output>
    ) async {
        let limit = settings.maxRequestMessageBytes
        await serve(outbound: outbound, context: context, settings: settings, wireCounts: wireCounts,
                    observedMethod: observedMethod) { tally in
            let compression = context.messageCompression
            do {
                var received: Input?
                for try await part in inbound {
                    let message = try decode(part, limit: limit, tally: tally, compression: compression, deserializer: deserializer)
                    guard received == nil else {
                        throw RPCError(code: .internal, message: "the client sent more than one request message")
                    }
                    received = message
                }
                guard let received else { throw RPCError(code: .internal, message: "the client sent no request message") }
                let response = try await handler(ServerRequest(metadata: metadata, message: received), context)
                let contents = try response.accepted.get()
                let bytes = try serializer.serialize(contents.message)
                tally?.sent(bytes.count)
                try await outbound.write(.metadata(contents.metadata))
                try await outbound.write(.message(bytes, compression.flagsForWrite))
                return (.ok, contents.trailingMetadata)
            } catch {
                let rpcError = RPCError.from(error)
                return (rpcError.status, rpcError.metadata)
            }
        }
    }

    /// What every RPC shares around its handling: the observer's start and finish, the
    /// deadline, and the status written at the end (or the stream failed, if cancelled).
    nonisolated(nonsending) private static func serve(
        outbound: RPCWriter<RPCResponsePart>.Closable, context: ServerContext, settings: ServerRPCSettings,
        wireCounts: (any MessageWireCounts)?, observedMethod: MethodDescriptor?,
        _ body: nonisolated(nonsending) @escaping @Sendable (CallTally?) async -> (Status, Metadata)
    ) async {
        let observer = settings.observer
        let started = observer == nil ? nil : ContinuousClock.now
        // Sizes on the wire come from the transport's counts; without them, serialized sizes.
        let tally = observer == nil || wireCounts != nil ? nil : CallTally()
        observer?.callStarted(observedMethod)
        let status: (Status, Metadata)
        let outcome = await runUntilDeadline(context) { await body(tally) }
        switch outcome {
        case .finished(let finalStatus): status = finalStatus
        case .deadlineExceeded:
            status = (Status(code: .deadlineExceeded, message: "the deadline passed before the handler finished"), [:])
        case .cancelled:
            status = (Status(code: .cancelled, message: "the RPC was cancelled"), [:])
        }
        if let observer, let started {
            observer.callFinished(observedMethod, code: status.0.code, duration: ContinuousClock.now - started,
                                  receivedBytes: wireCounts?.receivedMessageWireBytes ?? tally?.receivedBytes ?? 0,
                                  sentBytes: wireCounts?.sentMessageWireBytes ?? tally?.sentBytes ?? 0)
        }
        if case .cancelled = outcome {
            await outbound.finish(throwing: RPCError(code: .cancelled, message: "the RPC was cancelled"))
            return
        }
        try? await outbound.write(.status(status.0, status.1))
        await outbound.finish(throwing: nil)
    }

    /// One request message from its part: within the size limit, its compression recorded,
    /// deserialized.
    private static func decode<Input>(
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

    enum Outcome: Sendable {
        case finished((Status, Metadata))
        case deadlineExceeded
        case cancelled
    }

    /// Runs the handler in the RPC's own task. Past the context's deadline the transport
    /// cancels it (``RPCCancellationHandle/expireDeadline()``) from a timer it armed, so a
    /// deadline costs no task and nothing of it outlives the RPC.
    nonisolated(nonsending) private static func runUntilDeadline(
        _ context: ServerContext, _ body: nonisolated(nonsending) @escaping @Sendable () async -> (Status, Metadata)
    ) async -> Outcome {
        // Waiters on `context.cancellation` are released once the handler is done.
        defer { context.cancellation.raise() }
        let result = await body()
        if context.cancellation.isDeadlineExceeded { return .deadlineExceeded }
        return Task.isCancelled ? .cancelled : .finished(result)
    }

    /// Runs interceptors and the handler, writes metadata and messages; returns the status.
    nonisolated(nonsending) private static func respond<Input: Sendable, Output: Sendable>(
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
                let compression = context.messageCompression
                let writer = MappingWriter(target: outbound, serializer: serializer) { bytes in
                    tally?.sent(bytes.count)
                    return RPCResponsePart.message(bytes, compression.flagsForWrite)
                }
                let trailers = try await contents.producer(RPCWriter(wrapping: writer))
                return (.ok, trailers)
            } catch {
                let rpcError = RPCError.from(error)
                return (rpcError.status, rpcError.metadata)
            }
        }
    }

    nonisolated(nonsending) private static func intercept<Input: Sendable, Output: Sendable>(
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
