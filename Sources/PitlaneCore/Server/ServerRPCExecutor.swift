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
        stream: ServerRPCStream, transportContext: ServerTransportContext, settings: ServerRPCSettings,
        observedMethod: ObservedMethod,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async {
        // Everything the RPC keeps while its handler runs is in one object, made before the
        // handler runs: the frames under a waiting handler are most of what an idle stream
        // holds, and each value kept across the wait is a slot in them.
        guard
            let call = await ServerStreamingCall.start(
                stream: stream, transportContext: transportContext, settings: settings, observedMethod: observedMethod,
                deserializer: deserializer, serializer: serializer
            )
        else { return }
        let result = await respond(to: call, interceptors: settings.interceptors, handler: handler)
        // A response handed to a mailbox goes on without this task, and ends the RPC itself.
        guard let result = call.handlerReturned(result) else { return }
        await finish(result, observed: call.observed, cancellation: call.context.cancellation, outbound: call.target)
    }

    /// Runs a unary RPC with no interceptors: its one request is read straight from the
    /// stream and its one response written straight to it. Nothing generic in the message
    /// types is built per call beyond the request and response themselves (the streaming
    /// form's sequence, writer and response adapters cost a type-metadata lookup each).
    @inlinable
    nonisolated(nonsending) static func runUnary<Input: Sendable, Output: Sendable>(
        stream: ServerRPCStream, transportContext: ServerTransportContext, settings: ServerRPCSettings,
        observedMethod: ObservedMethod,
        deserializer: some MessageDeserializer<Input>, serializer: some MessageSerializer<Output>,
        handler: @escaping @Sendable (ServerRequest<Input>, ServerContext) async throws -> ServerResponse<Output>
    ) async {
        var inbound = stream.inbound.makeAsyncIterator()
        guard
            let metadata = await readMetadata(
                &inbound, of: stream, transportContext, observer: settings.observer,
                method: observedMethod)
        else { return }
        let outbound = stream.outbound
        let context = ServerContext(descriptor: stream.descriptor, transportContext: transportContext)
        let observed = ObservedCall.start(observer: settings.observer, method: observedMethod, wireCounts: stream.wireCounts)
        let compression = context.messageCompression
        let cancellation = context.cancellation
        let checks = RequestMessageChecks(limit: settings.maxRequestMessageBytes, observed: observed, compression: compression)
        let result: (Status, Metadata)
        do {
            var received: Input?
            while let part = try await inbound.next() {
                let message = try checks.decode(part, with: deserializer)
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

    /// The request's metadata, its stream's first part; nil when the stream failed first
    /// (cancelled while the headers were on their way), the RPC then answered with why.
    /// `iterator` is left at the first message.
    @inlinable @inline(__always)
    nonisolated(nonsending) static func readMetadata(
        _ iterator: inout RPCAsyncSequence<RPCRequestPart, any Error>.AsyncIterator, of stream: ServerRPCStream,
        _ transportContext: ServerTransportContext, observer: (any ServerCallObserver)?, method: ObservedMethod
    ) async -> Metadata? {
        let first: RPCRequestPart?
        do {
            first = try await iterator.next(isolation: #isolation)
        } catch {
            await reject(stream, unreadable: error, transportContext, observer: observer, method: method)
            return nil
        }
        guard case .metadata(let metadata)? = first else {
            await reject(
                stream, unreadable: RPCError(code: .internal, message: "the RPC began without metadata"),
                transportContext, observer: observer, method: method)
            return nil
        }
        return metadata
    }

    /// Answers an RPC whose metadata could not be read. Not inlined: an RPC that ends so is
    /// rare, and its temporaries would take room in every RPC's frame.
    @usableFromInline @inline(never)
    nonisolated(nonsending) static func reject(
        _ stream: ServerRPCStream, unreadable error: any Error, _ transportContext: ServerTransportContext,
        observer: (any ServerCallObserver)?, method: ObservedMethod
    ) async {
        let failure =
            transportContext.cancellation.isDeadlineExceeded
            ? RPCError(code: .deadlineExceeded, message: "the deadline passed before the request arrived")
            : RPCError.from(error)
        await RPCDispatch.reject(stream, failure, observer: observer, method: method)
    }

    /// Runs interceptors and the handler, writes metadata and messages; returns the status.
    /// Inlined into ``run``: one frame under the handler instead of two. The handler's
    /// response is taken apart elsewhere (``accept(_:interceptors:handler:)``), so that this
    /// frame, under the producer for as long as it runs, holds only the producer and its
    /// writer.
    @inlinable @inline(__always)
    nonisolated(nonsending) static func respond<Input: Sendable, Serializer: MessageSerializer>(
        to call: ServerStreamingCall<Input, Serializer>, interceptors: [any ServerInterceptor],
        handler:
            @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Serializer.Message>
    ) async -> (Status, Metadata) {
        let producer: @Sendable (RPCWriter<Serializer.Message>) async throws -> Metadata
        switch await accept(call, interceptors: interceptors, handler: handler) {
        case .success(let contents): producer = contents.producer
        case .failure(let error): return error.statusAndMetadata
        }
        do {
            return (.ok, try await producer(RPCWriter(wrapping: call)))
        } catch {
            return RPCError.statusAndMetadata(of: error)
        }
    }

    /// Runs interceptors and the handler; when the handler accepted the RPC, writes the
    /// response's metadata and returns the rest of the response: its producer. (The producer
    /// kept in its struct: a bare closure in a generic `Result` is called through a
    /// reabstraction thunk, a frame more under it.)
    @inlinable @inline(never)
    nonisolated(nonsending) static func accept<Input: Sendable, Serializer: MessageSerializer>(
        _ call: ServerStreamingCall<Input, Serializer>, interceptors: [any ServerInterceptor],
        handler:
            @escaping @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Serializer.Message>
    ) async -> Result<StreamingServerResponse<Serializer.Message>.Contents, RPCError> {
        do {
            let response = try await intercept(call.request, call.context, interceptors[...], handler)
            let contents = try response.accepted.get()
            try await call.target.write(.metadata(contents.metadata))
            return .success(contents)
        } catch {
            return .failure(RPCError.from(error))
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
        guard let status = ending(result, observed: observed, cancellation: cancellation, cancelled: Task.isCancelled) else {
            await outbound.finish(throwing: RPCError(code: .cancelled, message: "the RPC was cancelled"))
            return
        }
        try? await outbound.write(.status(status.0, status.1))
        await outbound.finish(throwing: nil)
    }

    /// ``finish(_:observed:cancellation:outbound:)`` for an RPC with no task left: its
    /// response was handed to a mailbox, which ended (or the handler returned after it did).
    static func finishWithoutTask(
        _ result: (Status, Metadata), observed: ObservedCall?, cancellation: RPCCancellationHandle,
        outbound: RPCWriter<RPCResponsePart>.Closable
    ) {
        let status = ending(result, observed: observed, cancellation: cancellation, cancelled: cancellation.isCancelled)
        outbound.finishWithoutWaiting(status.map { .status($0.0, $0.1) })
    }

    /// The status an RPC ends with, once observed and the cancellation handle raised (its
    /// waiters go once the handler is done): past its deadline `.deadlineExceeded`, else
    /// `result`; nil when it was cancelled (the stream is abandoned, no status).
    static func ending(
        _ result: (Status, Metadata), observed: ObservedCall?, cancellation: RPCCancellationHandle, cancelled: Bool
    ) -> (Status, Metadata)? {
        let deadlineExceeded = cancellation.isDeadlineExceeded
        let status: (Status, Metadata)
        if deadlineExceeded {
            status = (Status(code: .deadlineExceeded, message: "the deadline passed before the handler finished"), [:])
        } else if cancelled {
            status = (Status(code: .cancelled, message: "the RPC was cancelled"), [:])
        } else {
            status = result
        }
        cancellation.raise()
        observed?.finished(status.0.code)
        return cancelled && !deadlineExceeded ? nil : status
    }
}
