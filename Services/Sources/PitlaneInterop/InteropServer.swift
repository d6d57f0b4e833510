import PitlaneCore
import PitlaneHTTP2
import PitlaneHealth
import PitlaneObservability
import PitlaneReflection

/// A gRPC server over HTTP/2 serving `TestService`, health and reflection (and nothing else,
/// so `grpc.testing.UnimplementedService` is unimplemented, as the descriptions want).
public enum InteropServer {
    /// The server for `address`. Its transport compresses responses with gzip whenever the
    /// client accepts gzip; `TestService` turns that off for every response the request did not
    /// ask to be compressed.
    public static func make(
        address: HTTP2ServerTransport.Address, security: HTTP2ServerTransport.Security = .plaintext
    ) -> GRPCServer<HTTP2ServerTransport> {
        var config = HTTP2ServerTransport.Config.defaults
        config.rpc.responseCompression = .gzip
        // The descriptors are generated into this binary: they always parse.
        let reflection = try! ReflectionService(services: [
            (Grpc_Testing_TestService.descriptor, Grpc_Testing_TestService.fileDescriptorProtos),
            (Grpc_Health_V1_Health.descriptor, Grpc_Health_V1_Health.fileDescriptorProtos),
        ])
        let health = HealthService()
        health.setStatus(.serving)
        let services: [any RegistrableRPCService] = [TestService(), health, reflection]
        let metrics = ServerMetrics(services: services)
        config.addOperatorEndpoints(metrics: metrics, health: health)
        let transport = HTTP2ServerTransport(address: address, security: security, config: config)
        metrics.observe(transport)
        return GRPCServer(transport: transport, services: services, observer: metrics)
    }
}

extension InteropServer {
    /// Serves until the process ends; `onListening` gets the bound address first (the port the
    /// system chose, for port 0).
    public static func run(_ options: InteropServerOptions, onListening: @Sendable (SocketAddress) -> Void) async throws {
        let server = make(address: options.address, security: options.security)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            onListening(try await server.listeningAddress)
            try await group.waitForAll()
        }
    }
}
