/// Runs one server RPC: decodes requests, runs interceptors and the handler under the
/// deadline, writes metadata, responses and the status.
enum ServerRPCExecutor {
    static func run<Input: Sendable, Output: Sendable>(
        metadata: Metadata, inbound: RPCAsyncSequence<RPCRequestPart, any Error>,
        outbound: RPCWriter<RPCResponsePart>.Closable, context: ServerContext, settings: ServerRPCSettings,
        wireCounts: (any MessageWireCounts)?, observedMethod: MethodDescriptor?,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async {
        let limit = settings.maxRequestMessageBytes
        let compression = context.messageCompression
        let observer = settings.observer
        let started = observer == nil ? nil : ContinuousClock.now
        // Sizes on the wire come from the transport's counts; without them, serialized sizes.
        let tally = observer == nil || wireCounts != nil ? nil : CallTally()
        observer?.callStarted(observedMethod)
        let messages = MappedSequence(base: inbound) { part -> Input? in
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
        let request = StreamingServerRequest(metadata: metadata, messages: RPCAsyncSequence(wrapping: messages))
        let interceptors = settings.interceptors

        let status: (Status, Metadata)
        let outcome = await runUntilDeadline(context) {
            await respond(to: request, context: context, interceptors: interceptors, handler: handler,
                          serializer: serializer, outbound: outbound, tally: tally)
        }
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

    enum Outcome: Sendable {
        case finished((Status, Metadata))
        case deadlineExceeded
        case cancelled
    }

    /// Runs the handler in the RPC's own task. Past the context's deadline the transport
    /// cancels it (``RPCCancellationHandle/expireDeadline()``) from a timer it armed, so a
    /// deadline costs no task and nothing of it outlives the RPC.
    private static func runUntilDeadline(
        _ context: ServerContext, _ body: @escaping @Sendable () async -> (Status, Metadata)
    ) async -> Outcome {
        // Waiters on `context.cancellation` are released once the handler is done.
        defer { context.cancellation.raise() }
        let result = await body()
        if context.cancellation.isDeadlineExceeded { return .deadlineExceeded }
        return Task.isCancelled ? .cancelled : .finished(result)
    }

    /// Runs interceptors and the handler, writes metadata and messages; returns the status.
    private static func respond<Input: Sendable, Output: Sendable>(
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
                let writer = MappingWriter(target: outbound) { (message: Output) in
                    let bytes = try serializer.serialize(message)
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

    private static func intercept<Input: Sendable, Output: Sendable>(
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
