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

    @usableFromInline
    init(
        request: StreamingServerRequest<Input>, context: ServerContext, target: RPCWriter<RPCResponsePart>.Closable,
        observed: ObservedCall?, serializer: Serializer
    ) {
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
            context: context, target: stream.outbound, observed: observed, serializer: serializer)
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

    /// Counted as sent only once queued: a message not queued now is written again.
    private func tryWrite(bytes: [UInt8]) -> Bool {
        guard target.tryWrite(.message(bytes, context.messageCompression.flagsForWrite)) else { return false }
        observed?.sent(bytes.count)
        return true
    }
}
