import Synchronization

/// A gRPC server: routes the RPCs a transport accepts to the services' handlers.
///
/// ```swift
/// let server = GRPCServer(transport: transport, services: [Service()])
/// try await server.serve()
/// ```
public final class GRPCServer<Transport: ServerTransport>: Sendable {
    /// The transport the server accepts RPCs from.
    public let transport: Transport
    private let router: RPCRouter
    private let settings: ServerRPCSettings

    /// Creates a server for `services` on `transport`; it accepts RPCs once ``serve()`` runs.
    ///
    /// - Parameters:
    ///   - transport: the transport that accepts the server's RPCs.
    ///   - services: the services whose methods the server routes RPCs to.
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
        var settings = ServerRPCSettings(interceptors: interceptors, maxRequestMessageBytes: maxRequestMessageBytes, observer: observer)
        if let observer {
            router.tagMethods(for: observer)
            settings.unservedObserverTag = observer.tag(for: nil)
        }
        self.router = router
        self.settings = settings
    }

    /// Serves until `beginGracefulShutdown()` and the last RPC finish.
    public func serve() async throws {
        let router = self.router
        let settings = self.settings
        // The closure only forwards: its frame, under every RPC for as long as it runs, holds
        // nothing, and the work is in one non-generic function whose values are laid out at
        // compile time (a generic closure's are allocated on the task at run time).
        try await transport.listen { stream, transportContext in
            await RPCDispatch.serve(stream, transportContext, router: router, settings: settings)
        }
    }

    /// Stops accepting RPCs; those in flight run to their end, then `serve()` returns.
    public func beginGracefulShutdown() {
        transport.beginGracefulShutdown()
    }
}
