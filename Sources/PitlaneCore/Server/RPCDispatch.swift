/// How a server runs each RPC its transport accepts: routes it by its metadata, answers it
/// when no handler serves it, and runs the handler otherwise. Not generic, unlike the server:
/// every value here is laid out at compile time, where a generic function's are allocated on
/// the RPC's task at run time, and an idle stream's memory is mostly that task's frames.
enum RPCDispatch {
    /// Runs one RPC, from its request metadata to its end.
    @inline(never)
    nonisolated(nonsending) static func serve(
        _ stream: ServerRPCStream, _ transportContext: ServerTransportContext,
        router: RPCRouter, settings: ServerRPCSettings
    ) async {
        // Routed first, then run: the routing's frame is gone while the handler runs.
        let call = await route(stream, transportContext, router: router, settings: settings)
        guard let handler = call.handler else { return }
        let context = ServerContext(descriptor: stream.descriptor, transportContext: transportContext)
        await handler.run(call.metadata, call.inbound, stream.outbound, context, settings, stream.wireCounts)
    }

    /// Reads the request's metadata and finds the method's handler; an RPC that no handler
    /// serves is answered here, and no handler returned.
    @inline(never)
    nonisolated(nonsending) private static func route(
        _ stream: ServerRPCStream, _ transportContext: ServerTransportContext,
        router: RPCRouter, settings: ServerRPCSettings
    ) async -> RoutedCall {
        var iterator = stream.inbound.makeAsyncIterator()
        let metadata: Metadata
        do {
            guard case .metadata(let received)? = try await iterator.next() else {
                throw RPCError(code: .internal, message: "the RPC began without metadata")
            }
            metadata = received
        } catch {
            // Cancelled while the request's headers were on their way: say why.
            let failure = transportContext.cancellation.isDeadlineExceeded
                ? RPCError(code: .deadlineExceeded, message: "the deadline passed before the request arrived")
                : RPCError.from(error)
            await reject(stream, failure, observer: settings.observer, method: router.entry(for: stream.descriptor).map { _ in stream.descriptor })
            return .answered
        }
        let inbound = RPCAsyncSequence(remainderOf: iterator)
        guard let entry = router.entry(for: stream.descriptor) else {
            let error = RPCError(code: .unimplemented, message: "method \(stream.descriptor) is not implemented")
            await refuse(stream, metadata, inbound, transportContext, settings, error, observedMethod: nil)
            return .answered
        }
        guard let handler = entry.handlers[transportContext.codec] else {
            let error = RPCError(code: .unimplemented,
                                 message: "method \(stream.descriptor) has no \(transportContext.codec.rawValue) codec")
            await refuse(stream, metadata, inbound, transportContext, settings, error, observedMethod: stream.descriptor)
            return .answered
        }
        if transportContext.requiresNoSideEffects && entry.idempotency != .noSideEffects {
            let error = RPCError(code: .unimplemented,
                                 message: "method \(stream.descriptor) has side effects: call it with POST, not GET")
            await refuse(stream, metadata, inbound, transportContext, settings, error, observedMethod: stream.descriptor)
            return .answered
        }
        return RoutedCall(handler: handler, metadata: metadata, inbound: inbound)
    }

    /// Ends an RPC with a trailers-only response.
    @inline(never)
    nonisolated(nonsending) static func reject(_ stream: ServerRPCStream, _ error: RPCError, observer: (any ServerCallObserver)?,
                       method: MethodDescriptor?) async {
        if let observer {
            observer.callStarted(method)
            observer.callFinished(method, code: error.status.code, duration: .zero, receivedBytes: 0, sentBytes: 0)
        }
        try? await stream.outbound.write(.status(error.status, error.metadata))
        await stream.outbound.finish(throwing: nil)
    }
}

/// An RPC routed to its handler, and what the handler is called with. Not nested in the
/// generic server: a generic type's values are allocated on the task at run time. Not
/// optional: unwrapping would copy it into a second allocation on the task.
private struct RoutedCall {
    /// None when the RPC was answered without one.
    let handler: RPCRouter.Handler?
    let metadata: Metadata
    let inbound: RPCAsyncSequence<RPCRequestPart, any Error>

    static let answered = RoutedCall(handler: nil, metadata: [:], inbound: .elements([]))
}
