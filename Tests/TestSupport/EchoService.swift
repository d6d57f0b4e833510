import PitlaneCore
import PitlaneProtobuf
import Synchronization

public typealias EchoRequest = Pitlane_Test_Echo_EchoRequest
public typealias EchoResponse = Pitlane_Test_Echo_EchoResponse

/// Events handlers report, so tests wait for them instead of sleeping.
public final class Probe: Sendable {
    public let events: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private let attempts = Mutex(0)
    private let recorded = Mutex<[String]>([])

    public init() {
        (events, continuation) = AsyncStream.makeStream()
    }

    public func record(_ event: String) {
        recorded.withLock { $0.append(event) }
        continuation.yield(event)
    }

    /// Every event so far.
    public var history: [String] { recorded.withLock { $0 } }

    /// Counts a handler call; returns its number, from 1.
    public func countAttempt() -> Int {
        attempts.withLock {
            $0 += 1
            return $0
        }
    }
    public var attemptCount: Int { attempts.withLock { $0 } }

    /// Waits for the next event.
    public func next() async -> String? {
        var iterator = events.makeAsyncIterator()
        return await iterator.next()
    }
}

/// Echoes requests; the request's fields make it fail, stream, or wait for cancellation.
/// Request metadata comes back as initial and trailing metadata.
public struct EchoService: Pitlane_Test_Echo_Echo.ServiceProtocol {
    public let probe: Probe
    /// Attempts failing with `.unavailable` before the service answers, for retry tests.
    public var failFirstAttempts = 0
    /// Attempts that never answer (they wait to be cancelled), for hedging tests.
    public var stallFirstAttempts = 0

    public init(probe: Probe = Probe(), failFirstAttempts: Int = 0, stallFirstAttempts: Int = 0) {
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

    public func get(request: ServerRequest<EchoRequest>, context: ServerContext) async throws -> ServerResponse<EchoResponse> {
        try await obey(request.message, request.metadata, context)
        return ServerResponse(
            message: .with { $0.text = request.message.text },
            metadata: request.metadata, trailingMetadata: request.metadata
        )
    }

    public func collect(request: StreamingServerRequest<EchoRequest>, context: ServerContext) async throws -> ServerResponse<EchoResponse> {
        var texts: [String] = []
        for try await message in request.messages {
            try await obey(message, request.metadata, context)
            texts.append(message.text)
        }
        return ServerResponse(message: .with { $0.text = texts.joined(separator: " ") }, metadata: request.metadata)
    }

    public func expand(request: ServerRequest<EchoRequest>, context: ServerContext) async throws -> StreamingServerResponse<EchoResponse> {
        try await obey(request.message, request.metadata, context)
        let message = request.message
        return StreamingServerResponse(metadata: request.metadata) { writer in
            let payload = [UInt8](repeating: 0xA5, count: Int(message.payloadBytes))
            for index in 0..<Int(message.repeat) {
                try await writer.write(
                    .with {
                        $0.text = message.text
                        $0.index = Int32(index)
                        $0.payload = payload
                    })
            }
            return request.metadata
        }
    }

    public func update(
        request: StreamingServerRequest<EchoRequest>, context: ServerContext
    ) async throws -> StreamingServerResponse<EchoResponse> {
        StreamingServerResponse(metadata: request.metadata) { writer in
            var index: Int32 = 0
            for try await message in request.messages {
                try await obey(message, request.metadata, context)
                try await writer.write(
                    .with {
                        $0.text = message.text
                        $0.index = index
                    })
                index += 1
            }
            return request.metadata
        }
    }
}
