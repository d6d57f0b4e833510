import PitlaneCore
import TestSupport

/// A server on an in-process transport, serving while `body` runs.
func withEchoServer<Result: Sendable>(
    service: EchoService = EchoService(), transport: InProcessTransport = InProcessTransport(),
    serverInterceptors: [any ServerInterceptor] = [], clientInterceptors: [any ClientInterceptor] = [],
    _ body: (Pitlane_Test_Echo_Echo.Client<InProcessTransport.Client>, GRPCServer<InProcessTransport.Server>) async throws -> Result
) async throws -> Result {
    let server = GRPCServer(transport: transport.server, services: [service], interceptors: serverInterceptors)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.serve() }
        defer { server.beginGracefulShutdown() }
        return try await withGRPCClient(transport: transport.client, interceptors: clientInterceptors) { client in
            try await body(Pitlane_Test_Echo_Echo.Client(wrapping: client), server)
        }
    }
}
