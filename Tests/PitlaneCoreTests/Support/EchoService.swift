import PitlaneCore
import PitlaneProtobuf
import Synchronization

typealias EchoRequest = Pitlane_Test_Echo_EchoRequest
typealias EchoResponse = Pitlane_Test_Echo_EchoResponse

/// Events handlers report, so tests wait for them instead of sleeping.
final class Probe: Sendable {
    let events: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let attempts = Mutex(0)
    private let recorded = Mutex<[String]>([])

    init() {
        (events, continuation) = AsyncStream.makeStream()
    }

    func record(_ event: String) {
        recorded.withLock { $0.append(event) }
        continuation.yield(event)
    }

    /// Every event so far.
    var history: [String] { recorded.withLock { $0 } }

    /// Counts a handler call; returns its number, from 1.
    func countAttempt() -> Int { attempts.withLock { $0 += 1; return $0 } }
    var attemptCount: Int { attempts.withLock { $0 } }

    /// Waits for the next event.
    func next() async -> String? {
        var iterator = events.makeAsyncIterator()
        return await iterator.next()
    }
}

/// Echoes requests; the request's fields make it fail, stream, or wait for cancellation.
/// Request metadata comes back as initial and trailing metadata.
struct EchoService: Pitlane_Test_Echo_Echo.ServiceProtocol {
    let probe: Probe
    /// Attempts failing with `.unavailable` before the service answers, for retry tests.
    var failFirstAttempts = 0
    /// Attempts that never answer (they wait to be cancelled), for hedging tests.
    var stallFirstAttempts = 0

    init(probe: Probe = Probe(), failFirstAttempts: Int = 0, stallFirstAttempts: Int = 0) {
        self.probe = probe
        self.failFirstAttempts = failFirstAttempts
        self.stallFirstAttempts = stallFirstAttempts
    }

    /// Fails, waits for cancellation, or passes, as the request says.
    private func obey(_ request: EchoRequest, _ metadata: Metadata, _ context: ServerContext) async throws {
        let attempt = probe.countAttempt()
        if attempt <= failFirstAttempts {
            throw RPCError(code: .unavailable, message: "attempt \(attempt) fails on purpose")
        }
        if attempt <= stallFirstAttempts {
            probe.record("stalled")
            await context.cancellation.wait()
            probe.record("cancelled")
            throw CancellationError()
        }
        if request.failWithCode != 0 {
            guard let code = Status.Code(rawValue: Int(request.failWithCode)).flatMap(RPCError.Code.init) else {
                throw RPCError(code: .invalidArgument, message: "no status code \(request.failWithCode)")
            }
            throw RPCError(code: code, message: request.failWithMessage, metadata: metadata)
        }
        if request.waitForCancellation {
            probe.record("waiting")
            await context.cancellation.wait()
            probe.record(Task.isCancelled ? "cancelled" : "released without task cancellation")
            throw CancellationError()
        }
    }

    func get(request: ServerRequest<EchoRequest>, context: ServerContext) async throws -> ServerResponse<EchoResponse> {
        try await obey(request.message, request.metadata, context)
        return ServerResponse(
            message: .with { $0.text = request.message.text },
            metadata: request.metadata, trailingMetadata: request.metadata
        )
    }

    func collect(request: StreamingServerRequest<EchoRequest>, context: ServerContext) async throws -> ServerResponse<EchoResponse> {
        var texts: [String] = []
        for try await message in request.messages {
            try await obey(message, request.metadata, context)
            texts.append(message.text)
        }
        return ServerResponse(message: .with { $0.text = texts.joined(separator: " ") }, metadata: request.metadata)
    }

    func expand(request: ServerRequest<EchoRequest>, context: ServerContext) async throws -> StreamingServerResponse<EchoResponse> {
        try await obey(request.message, request.metadata, context)
        let message = request.message
        return StreamingServerResponse(metadata: request.metadata) { writer in
            let payload = [UInt8](repeating: 0xA5, count: Int(message.payloadBytes))
            for index in 0..<Int(message.repeat) {
                try await writer.write(.with { $0.text = message.text; $0.index = Int32(index); $0.payload = payload })
            }
            return request.metadata
        }
    }

    func update(request: StreamingServerRequest<EchoRequest>, context: ServerContext) async throws -> StreamingServerResponse<EchoResponse> {
        StreamingServerResponse(metadata: request.metadata) { writer in
            var index: Int32 = 0
            for try await message in request.messages {
                try await obey(message, request.metadata, context)
                try await writer.write(.with { $0.text = message.text; $0.index = index })
                index += 1
            }
            return request.metadata
        }
    }
}

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
