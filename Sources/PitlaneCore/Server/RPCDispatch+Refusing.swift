extension RPCDispatch {
    /// Answers an RPC that no handler serves (a method the server does not know, one it cannot
    /// serve in the request's codec or over GET) with `error`, a trailers-only response.
    ///
    /// The interceptors that ask to see such calls (``ServerInterceptor/seesUnservedCalls``: the
    /// shipped logging, access-log and tracing interceptors) run around it as around a handler,
    /// so the call gets its log line and its span like any other; the observer counts it under
    /// `observedMethod` (nil for a method the server does not know: metrics' `"other"`). Without
    /// such interceptors nothing runs but the observer. Not inlined into the routing: its
    /// frame would be in every RPC's.
    @inline(never)
    nonisolated(nonsending) static func refuse(
        _ stream: ServerRPCStream, _ metadata: Metadata, _ inbound: RPCAsyncSequence<RPCRequestPart, any Error>,
        _ transportContext: ServerTransportContext, _ settings: ServerRPCSettings, _ error: RPCError,
        observedMethod: MethodDescriptor?
    ) async {
        let interceptors = settings.interceptors.filter { $0.seesUnservedCalls }
        guard !interceptors.isEmpty else {
            return await reject(stream, error, observer: settings.observer, method: observedMethod)
        }
        var refusing = settings
        refusing.interceptors = interceptors
        let context = ServerContext(descriptor: stream.descriptor, transportContext: transportContext)
        // The request is never read: its messages stay bytes.
        await ServerRPCExecutor.run(
            metadata: metadata, inbound: inbound, outbound: stream.outbound, context: context, settings: refusing,
            wireCounts: stream.wireCounts, observedMethod: observedMethod,
            deserializer: UnreadBytes(), serializer: UnreadBytes()
        ) { (_: StreamingServerRequest<[UInt8]>, _: ServerContext) in
            StreamingServerResponse<[UInt8]>(error: error)
        }
    }
}

/// Messages as bytes, unchanged: the message type of a call no handler serves.
struct UnreadBytes: MessageSerializer, MessageDeserializer {
    typealias Message = [UInt8]

    func serialize(_ message: [UInt8]) -> [UInt8] { message }

    func deserialize(_ bytes: [UInt8]) -> [UInt8] { bytes }
}
