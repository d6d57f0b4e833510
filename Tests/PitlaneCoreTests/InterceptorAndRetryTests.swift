import PitlaneCore
import PitlaneProtobuf
import Synchronization
import TestSupport
import Testing

/// Records the order interceptors run in.
final class Trail: Sendable {
    private let entries = Mutex<[String]>([])
    func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

struct RecordingClientInterceptor: ClientInterceptor {
    let name: String
    let trail: Trail

    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output> {
        trail.add("client \(name) in")
        var request = request
        request.metadata.addString(name, forKey: "x-client-interceptors")
        let response = try await next(request, context)
        trail.add("client \(name) out")
        return response
    }
}

struct RecordingServerInterceptor: ServerInterceptor {
    let name: String
    let trail: Trail
    var reject = false

    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        trail.add("server \(name) in")
        if reject { throw RPCError(code: .permissionDenied, message: "\(name) says no") }
        var request = request
        request.metadata.addString(name, forKey: "x-server-interceptors")
        let response = try await next(request, context)
        trail.add("server \(name) out")
        return response
    }
}

@Suite("Interceptors and retries", .timeLimit(.minutes(5)))
struct InterceptorAndRetryTests {
    @Test("interceptors run in registration order on both sides and can change metadata")
    func order() async throws {
        let trail = Trail()
        try await withEchoServer(
            serverInterceptors: [
                RecordingServerInterceptor(name: "s1", trail: trail), RecordingServerInterceptor(name: "s2", trail: trail),
            ],
            clientInterceptors: [
                RecordingClientInterceptor(name: "c1", trail: trail), RecordingClientInterceptor(name: "c2", trail: trail),
            ]
        ) { echo, _ in
            let metadata = try await echo.get(request: ClientRequest(message: .with { $0.text = "x" })) { $0.metadata }
            #expect(metadata[stringValues: "x-client-interceptors"] == ["c1", "c2"])
            #expect(metadata[stringValues: "x-server-interceptors"] == ["s1", "s2"])
        }
        #expect(trail.all.prefix(4) == ["client c1 in", "client c2 in", "server s1 in", "server s2 in"])
        #expect(trail.all.contains("server s2 out") && trail.all.contains("client c1 out"))
    }

    @Test("a server interceptor can reject a call before the handler runs")
    func rejection() async throws {
        let trail = Trail()
        let probe = Probe()
        try await withEchoServer(
            service: EchoService(probe: probe),
            serverInterceptors: [RecordingServerInterceptor(name: "gate", trail: trail, reject: true)]
        ) { echo, _ in
            let error = await #expect(throws: RPCError.self) { try await echo.get(EchoRequest()) }
            #expect(error?.code == .permissionDenied)
            #expect(error?.message == "gate says no")
        }
        #expect(probe.attemptCount == 0)
    }

    static func retrying(_ codes: Set<Status.Code>) -> InProcessTransport {
        let policy = RetryPolicy(
            maxAttempts: 5, initialBackoff: .milliseconds(1), maxBackoff: .milliseconds(4),
            backoffMultiplier: 2, retryableStatusCodes: codes
        )
        let config = MethodConfig(names: [MethodConfig.Name(service: "pitlane.test.echo.Echo")], executionPolicy: .retry(policy))
        return InProcessTransport(serviceConfig: ServiceConfig(methodConfigs: [config]))
    }

    @Test("a retry policy retries .unavailable until an attempt succeeds, replaying streamed requests")
    func retriesSucceed() async throws {
        let probe = Probe()
        try await withEchoServer(service: EchoService(probe: probe, failFirstAttempts: 3), transport: Self.retrying([.unavailable])) {
            echo, _ in
            let response = try await echo.collect { writer in
                for word in ["a", "b", "c"] { try await writer.write(.with { $0.text = word }) }
            }
            #expect(response.text == "a b c")
        }
        #expect(probe.attemptCount == 6)  // three failed attempts, then one attempt reading three messages
    }

    @Test("a code not in the policy is not retried")
    func nonRetryable() async throws {
        let probe = Probe()
        try await withEchoServer(service: EchoService(probe: probe), transport: Self.retrying([.unavailable])) { echo, _ in
            let error = await #expect(throws: RPCError.self) { try await echo.get(.with { $0.failWithCode = 9 }) }
            #expect(error?.code == .failedPrecondition)
        }
        #expect(probe.attemptCount == 1)
    }

    @Test("attempts stop at maxAttempts and the last error is reported")
    func attemptsRunOut() async throws {
        let probe = Probe()
        try await withEchoServer(service: EchoService(probe: probe, failFirstAttempts: 100), transport: Self.retrying([.unavailable])) {
            echo, _ in
            let error = await #expect(throws: RPCError.self) { try await echo.get(EchoRequest()) }
            #expect(error?.code == .unavailable)
        }
        #expect(probe.attemptCount == 5)
    }

    static func hedging(
        delay: Duration, nonFatal: Set<Status.Code> = [.unavailable],
        timeSource: TimeSource = .continuous
    ) -> InProcessTransport {
        let policy = HedgingPolicy(maxAttempts: 3, hedgingDelay: delay, nonFatalStatusCodes: nonFatal)
        let config = MethodConfig(names: [MethodConfig.Name(service: "pitlane.test.echo.Echo")], executionPolicy: .hedge(policy))
        return InProcessTransport(serviceConfig: ServiceConfig(methodConfigs: [config]), timeSource: timeSource)
    }

    @Test("hedging: a second attempt starts after the delay and wins; the first is cancelled")
    func hedgingWins() async throws {
        let probe = Probe()
        let service = EchoService(probe: probe, stallFirstAttempts: 1)
        let clock = ManualClock()
        try await withEchoServer(service: service, transport: Self.hedging(delay: .seconds(1), timeSource: .manual(clock))) { echo, _ in
            async let response = echo.get(.with { $0.text = "fastest" })
            // The first attempt stalls; no second one starts before the hedging delay.
            #expect(await probe.next() == "stalled")
            await clock.waitForArmedTimers(atLeast: 1)
            #expect(probe.attemptCount == 1)
            clock.advance(by: .seconds(1))
            let answer = try await response
            #expect(answer.text == "fastest")
        }
        #expect(probe.attemptCount == 2)
        #expect(probe.history == ["stalled", "cancelled"])
    }

    @Test("hedging: a non-fatal status starts the next attempt at once, without waiting the delay")
    func hedgingNonFatal() async throws {
        let probe = Probe()
        try await withEchoServer(service: EchoService(probe: probe, failFirstAttempts: 2), transport: Self.hedging(delay: .seconds(3600))) {
            echo, _ in
            let response = try await echo.collect { writer in
                for word in ["x", "y"] { try await writer.write(.with { $0.text = word }) }
            }
            #expect(response.text == "x y")
        }
        #expect(probe.attemptCount == 4)  // two failures, then one attempt reading two messages
    }

    @Test("hedging: a fatal status ends the RPC")
    func hedgingFatal() async throws {
        let probe = Probe()
        try await withEchoServer(service: EchoService(probe: probe), transport: Self.hedging(delay: .seconds(3600))) { echo, _ in
            let error = await #expect(throws: RPCError.self) { try await echo.get(.with { $0.failWithCode = 9 }) }
            #expect(error?.code == .failedPrecondition)
        }
        #expect(probe.attemptCount == 1)
    }
}
