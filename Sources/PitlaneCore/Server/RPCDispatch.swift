/// How a server runs each RPC its transport accepts: finds the method's handler by the
/// stream's path and runs it, or answers the RPC when no handler serves it. Not generic,
/// unlike the server: every value here is laid out at compile time, where a generic
/// function's are allocated on the RPC's task at run time, and an idle stream's memory is
/// mostly that task's frames.
enum RPCDispatch {
    /// Runs one RPC, from its request metadata to its end. Routed without waiting: the handler
    /// reads the request's metadata itself, so that this frame, under the handler for the
    /// whole RPC, holds nothing but the handler.
    @inline(never)
    nonisolated(nonsending) static func serve(
        _ stream: ServerRPCStream, _ transportContext: ServerTransportContext,
        router: RPCRouter, settings: ServerRPCSettings
    ) async {
        if let (handler, observerTag) = router.handler(for: stream.descriptor, transportContext) {
            await handler.run(stream, transportContext, settings, observerTag)
        } else {
            await refuse(stream, transportContext, router: router, settings: settings)
        }
    }

    /// Ends an RPC with a trailers-only response.
    @inline(never)
    nonisolated(nonsending) static func reject(
        _ stream: ServerRPCStream, _ error: RPCError, observer: (any ServerCallObserver)?,
        method: ObservedMethod
    ) async {
        if let observer {
            observer.callStarted(method)
            observer.callFinished(method, code: error.status.code, duration: .zero, receivedBytes: 0, sentBytes: 0)
        }
        try? await stream.outbound.write(.status(error.status, error.metadata))
        await stream.outbound.finish(throwing: nil)
    }
}
