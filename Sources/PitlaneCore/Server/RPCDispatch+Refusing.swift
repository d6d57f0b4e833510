extension RPCDispatch {
    /// Answers an RPC that no handler serves (a method the server does not know, one it cannot
    /// serve in the request's codec or over GET) with a trailers-only response saying why.
    ///
    /// The interceptors that ask to see such calls (``ServerInterceptor/seesUnservedCalls``: the
    /// shipped logging, access-log and tracing interceptors) run around it as around a handler,
    /// so the call gets its log line and its span like any other; the observer counts it under
    /// its method when the server has the method (a method it does not know is metrics'
    /// `"other"`). Without such interceptors nothing runs but the observer. Not inlined into
    /// the dispatch: its frame would be under every RPC.
    @inline(never)
    nonisolated(nonsending) static func refuse(
        _ stream: ServerRPCStream, _ transportContext: ServerTransportContext, router: RPCRouter,
        settings: ServerRPCSettings
    ) async {
        let (error, observedMethod) = refusal(of: stream.descriptor, transportContext, router: router, settings: settings)
        let interceptors = settings.interceptors.filter { $0.seesUnservedCalls }
        guard !interceptors.isEmpty else {
            return await reject(stream, error, observer: settings.observer, method: observedMethod)
        }
        var refusing = settings
        refusing.interceptors = interceptors
        // The request is never read: its messages stay bytes.
        await ServerRPCExecutor.run(
            stream: stream, transportContext: transportContext, settings: refusing, observedMethod: observedMethod,
            deserializer: UnreadBytes(), serializer: UnreadBytes()
        ) { (_: StreamingServerRequest<[UInt8]>, _: ServerContext) in
            StreamingServerResponse<[UInt8]>(error: error)
        }
    }

    /// Why no handler serves `descriptor`, and the method the observer counts the RPC under.
    private static func refusal(
        of descriptor: MethodDescriptor, _ transportContext: ServerTransportContext, router: RPCRouter,
        settings: ServerRPCSettings
    ) -> (RPCError, observedMethod: ObservedMethod) {
        guard let entry = router.entry(for: descriptor) else {
            return (
                RPCError(code: .unimplemented, message: "method \(descriptor) is not implemented"),
                ObservedMethod(descriptor: nil, tag: settings.unservedObserverTag)
            )
        }
        let observed = ObservedMethod(descriptor: descriptor, tag: entry.observerTag)
        guard entry.handlers[transportContext.codec] != nil else {
            let error = RPCError(
                code: .unimplemented,
                message: "method \(descriptor) has no \(transportContext.codec.rawValue) codec")
            return (error, observed)
        }
        return (
            RPCError(code: .unimplemented, message: "method \(descriptor) has side effects: call it with POST, not GET"),
            observed
        )
    }
}

/// Messages as bytes, unchanged: the message type of a call no handler serves.
struct UnreadBytes: MessageSerializer, MessageDeserializer {
    typealias Message = [UInt8]

    func serialize(_ message: [UInt8]) -> [UInt8] { message }

    func deserialize(_ bytes: [UInt8]) -> [UInt8] { bytes }
}
