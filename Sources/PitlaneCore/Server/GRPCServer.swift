import Synchronization

/// A gRPC server: routes the RPCs a transport accepts to the services' handlers.
///
/// ```swift
/// let server = GRPCServer(transport: transport, services: [Service()])
/// try await server.serve()
/// ```
public final class GRPCServer<Transport: ServerTransport>: Sendable {
    public let transport: Transport
    private let router: RPCRouter
    private let settings: ServerRPCSettings

    /// - Parameters:
    ///   - interceptors: applied to every RPC, the first outermost.
    ///   - maxRequestMessageBytes: larger requests fail with `.resourceExhausted`. Default 4 MiB.
    ///   - observer: told of every RPC's start and end (metrics). Default none.
    public init(
        transport: Transport, services: [any RegistrableRPCService],
        interceptors: [any ServerInterceptor] = [], maxRequestMessageBytes: Int = 4 * 1024 * 1024,
        observer: (any ServerCallObserver)? = nil
    ) {
        self.transport = transport
        var router = RPCRouter()
        for service in services { service.registerMethods(with: &router) }
        self.router = router
        settings = ServerRPCSettings(interceptors: interceptors, maxRequestMessageBytes: maxRequestMessageBytes, observer: observer)
    }

    /// Serves until `beginGracefulShutdown()` and the last RPC finish.
    public func serve() async throws {
        let router = self.router
        let settings = self.settings
        try await transport.listen { stream, transportContext in
            // Routed first, then run: the routing's frame is gone while the handler runs.
            let call = await Self.route(stream, transportContext, router: router, settings: settings)
            guard let handler = call.handler else { return }
            let context = ServerContext(descriptor: stream.descriptor, peer: transportContext.peer,
                                        deadline: transportContext.deadline, cancellation: transportContext.cancellation)
            await handler.run(call.metadata, call.inbound, stream.outbound, context, settings, stream.wireCounts)
        }
    }

    /// Stops accepting RPCs; those in flight run to their end, then `serve()` returns.
    public func beginGracefulShutdown() {
        transport.beginGracefulShutdown()
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
