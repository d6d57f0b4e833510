/// Runs one client RPC: interceptors once, then attempts on transport streams (more than one
/// under a retry policy), then the caller's response handler while the chosen stream is open.
struct ClientRPCExecutor<Transport: ClientTransport>: Sendable {
    let transport: Transport
    let interceptors: [any ClientInterceptor]
    /// Request bytes kept for replay per RPC (gRFC A6's per-RPC retry buffer).
    let retryBufferBytes: Int
    /// Told of each call's attempts and end; nil costs nothing per call.
    let observer: (any ClientCallObserver)?

    func execute<In: Sendable, Out: Sendable, Result: Sendable>(
        request: StreamingClientRequest<In>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<In>, deserializer: some MessageDeserializer<Out>,
        options: CallOptions,
        onResponse: @escaping @Sendable (StreamingClientResponse<Out>) async throws -> Result
    ) async throws -> Result {
        let options = options.merged(with: transport.config(forMethod: descriptor))
        let context = ClientContext(descriptor: descriptor, options: options)
        let callRecorder = observer.map { ClientCallRecorder(observer: $0, method: descriptor, timeSource: transport.timeSource) }
        let call = Call(executor: self, serializer: serializer, deserializer: deserializer, recorder: callRecorder)
        let callExecutor = transport.callExecutor
        let run: @Sendable () async throws -> Result = {
            // On the transport's executor (its event loop), with every child task: messages
            // reach the call without a thread hop.
            try await withTaskExecutorPreference(callExecutor) {
                // Streams, producers and forwarders are children of this group: when the
                // response handler returns, cancelling the group closes them all.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    defer { group.cancelAll() }
                    let response = try await call.intercept(request, context, index: 0, group: &group)
                    return try await onResponse(response)
                }
            }
        }
        guard let recorder = callRecorder else {
            if let timeout = options.timeout {
                return try await withDeadline(transport.timeSource.now + timeout, on: transport.timeSource, run)
            }
            return try await run()
        }
        // The committed attempt's status ends the call; these end it when none did (an
        // interceptor answered, or the call failed before an attempt was chosen).
        do {
            let result: Result
            if let timeout = options.timeout {
                result = try await withDeadline(
                    transport.timeSource.now + timeout, on: transport.timeSource,
                    onExpiry: { recorder.expireDeadline() }, run)
            } else {
                result = try await run()
            }
            recorder.finish(.ok)
            return result
        } catch {
            recorder.finish(RPCError.from(error).code.status)
            throw error
        }
    }

    /// Runs one RPC with `onResponse` in the caller's task and isolation, so it need not be
    /// `Sendable` and may touch the caller's state (a main-actor model's, say).
    ///
    /// The RPC itself (interceptors, attempts, the deadline) runs as above in a child task on
    /// the transport's executor, hands the response over, and keeps the call open until the
    /// handler is done. A deadline that passes meanwhile ends the call's streams, so the handler
    /// sees its reads fail, and the RPC fails with `.deadlineExceeded` whatever the handler
    /// returned; an error the handler throws ends the RPC with it, as it would on the call's
    /// own task.
    func execute<In: Sendable, Out: Sendable, Result>(
        request: StreamingClientRequest<In>, descriptor: MethodDescriptor,
        serializer: some MessageSerializer<In>, deserializer: some MessageDeserializer<Out>,
        options: CallOptions, isolation: isolated (any Actor)?,
        onResponse handleResponse: (StreamingClientResponse<Out>) async throws -> Result
    ) async throws -> Result {
        let handedOver = OneShot<Swift.Result<StreamingClientResponse<Out>, any Error>>()
        let handled = OneShot<Swift.Result<Void, any Error>>()
        return try await withThrowingTaskGroup(of: Void.self, isolation: isolation) { call in
            call.addTask {
                do {
                    try await execute(
                        request: request, descriptor: descriptor, serializer: serializer, deserializer: deserializer,
                        options: options
                    ) { response in
                        handedOver.fulfil(.success(response))
                        try await handled.value().get()
                    }
                } catch {
                    handedOver.fulfil(.failure(error))
                    throw error
                }
            }
            let result: Result
            do {
                result = try await handleResponse(try await handedOver.value().get())
            } catch {
                handled.fulfil(.failure(error))
                // The call's own ending (a deadline, say) explains the handler's error best.
                try await call.waitForAll()
                throw error
            }
            handled.fulfil(.success(()))
            try await call.waitForAll()
            return result
        }
    }

    /// One call's typed pieces.
    struct Call<Serializer: MessageSerializer, Deserializer: MessageDeserializer>: Sendable
    where Serializer.Message: Sendable, Deserializer.Message: Sendable {
        typealias In = Serializer.Message
        typealias Out = Deserializer.Message

        let executor: ClientRPCExecutor
        let serializer: Serializer
        let deserializer: Deserializer
        /// The call's measurements, when the client has an observer.
        let recorder: ClientCallRecorder?

        func intercept(
            _ request: StreamingClientRequest<In>, _ context: ClientContext, index: Int,
            group: inout ThrowingTaskGroup<Void, any Error>
        ) async throws -> StreamingClientResponse<Out> {
            guard index < executor.interceptors.count else {
                return try await start(request, context, group: &group)
            }
            return try await executor.interceptors[index].intercept(request: request, context: context) { request, context in
                try await intercept(request, context, index: index + 1, group: &group)
            }
        }

        private func start(
            _ request: StreamingClientRequest<In>, _ context: ClientContext,
            group: inout ThrowingTaskGroup<Void, any Error>
        ) async throws -> StreamingClientResponse<Out> {
            if case .retry(let policy)? = context.options.executionPolicy, policy.maxAttempts > 1 {
                return try await retrying(request, context, policy: policy, group: &group)
            }
            if case .hedge(let policy)? = context.options.executionPolicy, policy.maxAttempts > 1 {
                return try await hedging(request, context, policy: policy, group: &group)
            }
            let attempt = try await openAttempt(context, group: &group)
            attempt.recorder?.commit()
            guard let stream = attempt.stream else { return StreamingClientResponse(error: attempt.error!) }
            let serializer = self.serializer
            let limit = context.options.maxRequestMessageBytes ?? .max
            let compression = context.options.messageCompression
            let recorder = attempt.recorder
            group.addTask {
                await send(metadata: request.metadata, to: stream.outbound) { outbound in
                    try await request.producer(
                        RPCWriter(
                            wrapping: MappingWriter(target: outbound, serializer: serializer) { serialized -> RPCRequestPart in
                                let bytes = try Self.checkedSize(serialized, limit: limit, what: "request")
                                recorder?.recordSent(bytes.count)
                                return .message(bytes, compression?.flagsForWrite ?? [])
                            }))
                }
            }
            return makeResponse(await readHead(stream, recorder), context, recorder)
        }

        /// gRFC A6: attempts failing with a retryable code before response headers arrive are
        /// retried after a jittered exponential backoff, while the request can be replayed.
        private func retrying(
            _ request: StreamingClientRequest<In>, _ context: ClientContext, policy: RetryPolicy,
            group: inout ThrowingTaskGroup<Void, any Error>
        ) async throws -> StreamingClientResponse<Out> {
            let replay = startReplay(request, context, group: &group)
            var backoff = policy.initialBackoff
            for attemptNumber in 1...policy.maxAttempts {
                let attempt = try await openAttempt(context, group: &group)
                let head: ResponseHead
                let forwarder = RPCCancellationHandle()
                let recorder = attempt.recorder
                if let stream = attempt.stream {
                    group.addTask { await forwarder.run { await forward(replay, request.metadata, to: stream.outbound, recorder) } }
                    head = await readHead(stream, recorder)
                } else {
                    head = .rejected(attempt.error!)
                }
                if case .rejected(let error) = head, attemptNumber < policy.maxAttempts,
                    policy.retryableStatusCodes.contains(error.code.status), replay.isReplayable,
                    let delay = Self.retryDelay(after: error, backoff: backoff)
                {
                    attempt.release.cancel()
                    forwarder.cancel()
                    try await executor.transport.timeSource.sleep(for: delay)
                    backoff = min(backoff * policy.backoffMultiplier, policy.maxBackoff)
                    continue
                }
                replay.commit()
                recorder?.commit()
                return makeResponse(head, context, recorder)
            }
            preconditionFailure("the retry loop returns from its last attempt")
        }

        /// gRFC A6 hedging: attempts start `hedgingDelay` apart (at once after a non-fatal
        /// status) until one gets response headers or a fatal status; that one wins and the
        /// others are cancelled.
        private func hedging(
            _ request: StreamingClientRequest<In>, _ context: ClientContext, policy: HedgingPolicy,
            group: inout ThrowingTaskGroup<Void, any Error>
        ) async throws -> StreamingClientResponse<Out> {
            let replay = startReplay(request, context, group: &group)
            var attempts: [(release: RPCCancellationHandle, forwarder: RPCCancellationHandle, recorder: ClientAttemptRecorder?)] = []
            var lastFailure = RPCError(code: .unavailable, message: "no hedged attempt answered")
            var pending = 0
            var mayStartMore = true

            return try await withThrowingTaskGroup(of: HedgeEvent.self) { events in
                defer { events.cancelAll() }
                waiting: while true {
                    if mayStartMore, attempts.count < policy.maxAttempts {
                        let index = attempts.count
                        let attempt = try await openAttempt(context, group: &group)
                        let forwarder = RPCCancellationHandle()
                        let recorder = attempt.recorder
                        attempts.append((attempt.release, forwarder, recorder))
                        pending += 1
                        if let stream = attempt.stream {
                            group.addTask { await forwarder.run { await forward(replay, request.metadata, to: stream.outbound, recorder) } }
                            events.addTask { .head(index, SendableHead(await readHead(stream, recorder))) }
                        } else {
                            let error = attempt.error!
                            events.addTask { .head(index, SendableHead(.rejected(error))) }
                        }
                        if attempts.count < policy.maxAttempts {
                            events.addTask {
                                try await executor.transport.timeSource.sleep(for: policy.hedgingDelay)
                                return .hedgeDelayPassed
                            }
                        }
                        mayStartMore = false
                    }
                    guard let event = try await events.next() else { break waiting }
                    switch event {
                    case .hedgeDelayPassed:
                        mayStartMore = replay.isReplayable
                    case .head(let index, let head):
                        pending -= 1
                        if case .rejected(let error) = head.head, policy.nonFatalStatusCodes.contains(error.code.status) {
                            lastFailure = error
                            attempts[index].forwarder.cancel()
                            attempts[index].release.cancel()
                            // A non-fatal status starts the next attempt at once, unless the
                            // server asks for no more (`grpc-retry-pushback-ms` not a number).
                            let pushback = error.metadata[stringValues: "grpc-retry-pushback-ms"].first
                            mayStartMore = replay.isReplayable && pushback.map { Int($0).map { $0 >= 0 } ?? false } ?? true
                            if (!mayStartMore || attempts.count == policy.maxAttempts) && pending == 0 { break waiting }
                            continue waiting
                        }
                        for (other, handles) in attempts.enumerated() where other != index {
                            handles.forwarder.cancel()
                            handles.release.cancel()
                        }
                        replay.commit()
                        attempts[index].recorder?.commit()
                        return makeResponse(head.head, context, attempts[index].recorder)
                    }
                }
                replay.commit()
                // No attempt's response reaches the caller: the call ends here.
                recorder?.finish(lastFailure.code.status)
                return StreamingClientResponse(error: lastFailure)
            }
        }

        /// Runs the request producer once, into a buffer attempts replay from.
        private func startReplay(
            _ request: StreamingClientRequest<In>, _ context: ClientContext,
            group: inout ThrowingTaskGroup<Void, any Error>
        ) -> ReplayBuffer<RPCRequestPart> {
            let replay = ReplayBuffer<RPCRequestPart>(limit: executor.retryBufferBytes, sizeOf: \.byteCount)
            let serializer = self.serializer
            let limit = context.options.maxRequestMessageBytes ?? .max
            let compression = context.options.messageCompression
            group.addTask {
                do {
                    try await request.producer(
                        RPCWriter(
                            wrapping: ReplayWriter(buffer: replay) { message in
                                .message(
                                    try Self.checkedSize(serializer.serialize(message), limit: limit, what: "request"),
                                    compression?.flagsForWrite ?? [])
                            }))
                    replay.finish(.success(()))
                } catch {
                    replay.finish(.failure(error))
                }
            }
            return replay
        }

        /// Sends the request metadata and every buffered message to one attempt's stream.
        private func forward(
            _ replay: ReplayBuffer<RPCRequestPart>, _ metadata: Metadata, to outbound: RPCWriter<RPCRequestPart>.Closable,
            _ recorder: ClientAttemptRecorder?
        ) async {
            await send(metadata: metadata, to: outbound) { outbound in
                var index = 0
                while let message = try await replay.element(at: index) {
                    if let recorder, case .message(let bytes, _) = message { recorder.recordSent(bytes.count) }
                    try await outbound.write(message)
                    index += 1
                }
            }
        }

        /// The server's pushback (`grpc-retry-pushback-ms`) or a random share of the backoff;
        /// nil when the server asks not to retry.
        static func retryDelay(after error: RPCError, backoff: Duration) -> Duration? {
            if let pushback = error.metadata[stringValues: "grpc-retry-pushback-ms"].first {
                guard let milliseconds = Int(pushback), milliseconds >= 0 else { return nil }
                return .milliseconds(milliseconds)
            }
            let seconds = backoff / .seconds(1)
            return .seconds(Double.random(in: 0...max(seconds, 0)))
        }

        // MARK: Attempts

        struct Attempt {
            var stream: ClientRPCStream?
            var error: RPCError?
            /// Raising it closes the attempt's stream.
            var release: RPCCancellationHandle
            /// The attempt's measurements, when the client has an observer.
            var recorder: ClientAttemptRecorder?
        }

        /// What an attempt's child task hands over: its stream, or why it has none, and the
        /// attempt's recorder (made with the stream, whose wire counts it reads).
        struct Opened: Sendable {
            var stream: ClientRPCStream?
            var error: RPCError?
            var recorder: ClientAttemptRecorder?
        }

        /// Opens a transport stream in a child task that keeps it open until released.
        private func openAttempt(
            _ context: ClientContext, group: inout ThrowingTaskGroup<Void, any Error>
        ) async throws -> Attempt {
            let release = RPCCancellationHandle()
            let delivery = OneShot<Opened>()
            let transport = executor.transport
            let started = self.recorder?.startAttempt()
            group.addTask {
                var recorder: ClientAttemptRecorder?
                do {
                    try await transport.withStream(descriptor: context.descriptor, options: context.options) { stream in
                        recorder = started?.recorder(wireCounts: stream.wireCounts)
                        delivery.fulfil(Opened(stream: stream, recorder: recorder))
                        await release.wait()
                        // Released (retried, lost the hedge) or the call is over: unless a
                        // status ended the attempt, it was given up.
                        recorder?.abandon()
                    }
                } catch {
                    let failure = RPCError.from(error, unknownMessage: "the transport failed: \(error)")
                    let failed = recorder ?? started?.recorder(wireCounts: nil)
                    failed?.fail(failure)
                    delivery.fulfil(Opened(error: failure, recorder: failed))
                }
            }
            let opened = try await delivery.value()
            return Attempt(stream: opened.stream, error: opened.error, release: release, recorder: opened.recorder)
        }

        /// Writes the request metadata, then what `body` writes, then closes the request stream.
        private func send(
            metadata: Metadata, to outbound: RPCWriter<RPCRequestPart>.Closable,
            _ body: (RPCWriter<RPCRequestPart>.Closable) async throws -> Void
        ) async {
            do {
                try await outbound.write(.metadata(metadata))
                try await body(outbound)
                await outbound.finish(throwing: nil)
            } catch {
                await outbound.finish(throwing: error)
            }
        }

        // MARK: Responses

        enum ResponseHead {
            case accepted(Metadata, RPCAsyncSequence<RPCResponsePart, any Error>.AsyncIterator)
            case trailersOnly(Metadata)
            case rejected(RPCError)
        }

        enum HedgeEvent: Sendable {
            case head(Int, SendableHead)
            case hedgeDelayPassed
        }

        /// Carries a head out of the child task that read it. `@unchecked Sendable`: the
        /// iterator inside moves from that task to the coordinator, which alone reads on.
        struct SendableHead: @unchecked Sendable {
            let head: ResponseHead
            init(_ head: ResponseHead) { self.head = head }
        }

        /// The response's metadata, or how the attempt ended without any (which `recorder` records).
        private func readHead(_ stream: ClientRPCStream, _ recorder: ClientAttemptRecorder?) async -> ResponseHead {
            var iterator = stream.inbound.makeAsyncIterator()
            let failure: RPCError
            do {
                switch try await iterator.next() {
                case .metadata(let metadata)?:
                    return .accepted(metadata, iterator)
                case .status(let status, let trailers)?:
                    recorder?.finish(status.code)
                    if let error = RPCError(status: status, metadata: trailers) { return .rejected(error) }
                    return .trailersOnly(trailers)
                case .message?:
                    failure = RPCError(code: .internal, message: "the server sent a message before its metadata")
                case nil:
                    failure = RPCError(code: .unavailable, message: "the stream closed before the server answered")
                }
            } catch {
                failure = RPCError.from(error, unknownMessage: "reading the response failed: \(error)")
            }
            recorder?.fail(failure)
            return .rejected(failure)
        }

        private func makeResponse(
            _ head: ResponseHead, _ context: ClientContext, _ recorder: ClientAttemptRecorder?
        ) -> StreamingClientResponse<Out> {
            switch head {
            case .rejected(let error):
                return StreamingClientResponse(error: error)
            case .trailersOnly(let trailers):
                return StreamingClientResponse(
                    accepted: .success(.init(metadata: [:], bodyParts: .elements([.trailingMetadata(trailers)]))))
            case .accepted(let metadata, let iterator):
                let deserializer = self.deserializer
                let limit = context.options.maxResponseMessageBytes ?? 4 * 1024 * 1024
                let compression = context.options.messageCompression
                let decode = { @Sendable (part: RPCResponsePart) throws -> StreamingClientResponse<Out>.BodyPart in
                    switch part {
                    case .message(let bytes, let flags):
                        recorder?.recordReceived(bytes.count)
                        compression?.recordRead(flags)
                        return .message(try deserializer.deserialize(Self.checkedSize(bytes, limit: limit, what: "response")))
                    case .status(let status, let trailers):
                        recorder?.finish(status.code)
                        if let error = RPCError(status: status, metadata: trailers) { throw error }
                        return .trailingMetadata(trailers)
                    case .metadata:
                        throw RPCError(code: .internal, message: "the server sent metadata twice")
                    }
                }
                if case .stream(let stream)? = iterator.source {
                    // Straight from the transport's stream: one closure between the reader and
                    // the stream rather than an iterator per level of wrapping, each a hop to
                    // the generic executor and back per message.
                    return StreamingClientResponse(
                        accepted: .success(
                            .init(
                                metadata: metadata,
                                bodyParts: RPCAsyncSequence {
                                    do {
                                        return try await stream.next().map(decode)
                                    } catch {
                                        // An error that ends the parts (the transport's, a limit's) ends the attempt.
                                        recorder?.fail(error)
                                        throw error
                                    }
                                })))
                }
                let parts = MappedSequence(base: IteratorSequence(iterator: iterator)) { try decode($0) }
                guard let recorder else {
                    return StreamingClientResponse(
                        accepted: .success(.init(metadata: metadata, bodyParts: RPCAsyncSequence(wrapping: parts))))
                }
                // An error that ends the parts (the transport's, a limit's) ends the attempt.
                let observed = FailureObservingSequence(base: parts) { error in recorder.fail(error) }
                return StreamingClientResponse(
                    accepted: .success(.init(metadata: metadata, bodyParts: RPCAsyncSequence(wrapping: observed))))
            }
        }

        static func checkedSize(_ bytes: [UInt8], limit: Int, what: String) throws -> [UInt8] {
            guard bytes.count <= limit else {
                throw RPCError(code: .resourceExhausted, message: "\(what) message of \(bytes.count) bytes exceeds the limit of \(limit)")
            }
            return bytes
        }
    }
}

/// Serializes request messages into a replay buffer.
struct ReplayWriter<Message: Sendable>: RPCWriterProtocol {
    let buffer: ReplayBuffer<RPCRequestPart>
    let serialize: @Sendable (Message) throws -> RPCRequestPart

    func write(_ message: Message) async throws {
        await buffer.append(try serialize(message))
    }
}
