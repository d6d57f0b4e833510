/// Logs each RPC a server handles: method, peer, status and duration, one line at the end.
///
/// ```
/// rpc /swiftkart.SwiftKartService/ListRaces from ipv4:127.0.0.1:52144: OK in 1.2 ms
/// ```
public struct LoggingServerInterceptor: ServerInterceptor {
    private let log: @Sendable (String) -> Void

    /// Creates an interceptor that writes each line with `log`.
    ///
    /// - Parameter log: receives each line; defaults to standard output.
    public init(log: @escaping @Sendable (String) -> Void = { print($0) }) {
        self.log = log
    }

    /// True: calls to methods the server does not serve are logged too (UNIMPLEMENTED).
    public var seesUnservedCalls: Bool { true }

    /// Passes the RPC on and logs one line when it ends, with its status code and how long it took.
    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        let start = ContinuousClock.now
        let log = self.log
        let prefix = "rpc \(context.descriptor.path) from \(context.peer)"
        @Sendable func finished(_ outcome: String) {
            log("\(prefix): \(outcome) in \(Self.format(ContinuousClock.now - start))")
        }
        return try await observing(request, context, next: next) { status in
            finished("\(status.code)")
        }
    }

    static func format(_ duration: Duration) -> String {
        let milliseconds = duration / .milliseconds(1)
        return milliseconds < 1000
            ? "\((milliseconds * 10).rounded() / 10) ms"
            : "\((milliseconds / 100).rounded() / 10) s"
    }
}

/// Logs each RPC a client makes: method, status and duration.
public struct LoggingClientInterceptor: ClientInterceptor {
    private let log: @Sendable (String) -> Void

    /// Creates an interceptor that writes each line with `log`; by default, to standard output.
    public init(log: @escaping @Sendable (String) -> Void = { print($0) }) {
        self.log = log
    }

    /// Passes the call on and logs one line when the response headers arrive or the call fails, with how long that took.
    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output> {
        let start = ContinuousClock.now
        func log(_ outcome: String) {
            self.log("call \(context.descriptor.path): \(outcome) after \(LoggingServerInterceptor.format(ContinuousClock.now - start))")
        }
        do {
            let response = try await next(request, context)
            switch response.accepted {
            case .success: log("response headers")
            case .failure(let error): log("\(error.code)")
            }
            return response
        } catch {
            log("\(RPCError.from(error).code)")
            throw error
        }
    }
}
