// The code of the article "Interceptors" (Pitlane.docc/Interceptors.md).
import Pitlane
import Synchronization

/// Counts the calls of each method.
final class CallCounter: ServerInterceptor {
    private let counts = Mutex<[String: Int]>([:])

    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        counts.withLock { $0[context.descriptor.method, default: 0] += 1 }
        return try await next(request, context)
    }

    func count(of method: String) -> Int {
        counts.withLock { $0[method] ?? 0 }
    }
}

/// Adds the caller's request id to every call.
struct RequestID: ClientInterceptor {
    let id: String

    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output> {
        var request = request
        request.metadata.replaceOrAddString(id, forKey: "x-request-id")
        return try await next(request, context)
    }
}

func interceptedServer(tokens: [String: String]) -> GRPCServer<HTTP2ServerTransport> {
    let authentication = BearerTokenAuthenticationInterceptor { token, _ in tokens[token] }
    return GRPCServer(
        transport: .http2(address: .ipv4(host: "0.0.0.0", port: 8080)),
        services: [GreeterService()],
        interceptors: [LoggingServerInterceptor(), authentication, CallCounter()]
    )
}

func interceptedClient(port: Int) async throws {
    let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))
    let interceptors: [any ClientInterceptor] = [BearerTokenClientInterceptor(token: "alice-token"), RequestID(id: "42")]
    try await withGRPCClient(transport: transport, interceptors: interceptors) { client in
        _ = try await Hello_Greeter.Client(wrapping: client).sayHello(.with { $0.name = "Ada" })
    }
}
