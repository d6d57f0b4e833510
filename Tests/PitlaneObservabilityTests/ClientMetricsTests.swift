import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

@testable import PitlaneObservability

@Suite("Client metrics", .timeLimit(.minutes(1)))
struct ClientMetricsTests {
    static let getMethod = "pitlane.test.echo.Echo/Get"

    /// An echo server in process, and a client counting into `metrics`, while `body` runs.
    static func withEcho<T: Sendable>(
        _ service: EchoService = EchoService(), transport: InProcessTransport = InProcessTransport(), metrics: ClientMetrics,
        _ body: (Pitlane_Test_Echo_Echo.Client<InProcessTransport.Client>) async throws -> T
    ) async throws -> T {
        let server = GRPCServer(transport: transport.server, services: [service])
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            return try await withGRPCClient(transport: transport.client, observer: metrics) { client in
                try await body(Pitlane_Test_Echo_Echo.Client(wrapping: client))
            }
        }
    }

    /// The samples of a Prometheus text exposition: `name{labels}` → value.
    static func parse(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    static func key(
        _ name: String, method: String = ClientMetricsTests.getMethod, status: String? = nil,
        target: String = "in-process"
    ) -> String {
        "\(name){grpc_method=\"\(method)\",grpc_target=\"\(target)\"" + (status.map { ",grpc_status=\"\($0)\"" } ?? "") + "}"
    }

    /// The key of a histogram's bucket `le`, from the key of its series.
    static func bucket(_ key: String, le: String) -> String {
        String(key.dropLast()) + ",le=\"\(le)\"}"
    }

    static let histograms = [
        "grpc_client_attempt_duration_seconds", "grpc_client_attempt_sent_total_compressed_message_size_bytes",
        "grpc_client_attempt_rcvd_total_compressed_message_size_bytes", "grpc_client_call_duration_seconds",
    ]

    @Test("4 OK and 3 NOT_FOUND calls: 7 attempts started, and exactly 4 and 3 in every histogram's count by status")
    func counts() async throws {
        let metrics = ClientMetrics(target: "in-process", methods: Pitlane_Test_Echo_Echo.Method.descriptors)
        try await Self.withEcho(metrics: metrics) { echo in
            for _ in 0..<4 { _ = try await echo.get(.with { $0.text = "hello" }) }
            for _ in 0..<3 {
                let error = await #expect(throws: RPCError.self) { _ = try await echo.get(.with { $0.failWithCode = 5 }) }
                #expect(error?.code == .notFound)
            }
        }
        let text = metrics.render()
        let samples = Self.parse(text)
        #expect(text.contains("# TYPE grpc_client_attempt_started_total counter\n"))
        #expect(samples[Self.key("grpc_client_attempt_started_total")] == 7)
        for name in Self.histograms {
            #expect(text.contains("# TYPE \(name) histogram\n"))
            #expect(samples[Self.key(name + "_count", status: "OK")] == 4, "\(name)")
            #expect(samples[Self.key(name + "_count", status: "NOT_FOUND")] == 3, "\(name)")
            #expect(samples[Self.bucket(Self.key(name + "_bucket", status: "OK"), le: "+Inf")] == 4, "\(name)")
            #expect(samples[Self.key(name + "_count", status: "INTERNAL")] == nil, "\(name): only what happened")
        }
        // "hello" is 7 bytes each way (tag, length, text); a NOT_FOUND request 2, its answer none.
        #expect(samples[Self.key("grpc_client_attempt_sent_total_compressed_message_size_bytes_sum", status: "OK")] == 28)
        #expect(samples[Self.key("grpc_client_attempt_rcvd_total_compressed_message_size_bytes_sum", status: "OK")] == 28)
        #expect(samples[Self.key("grpc_client_attempt_sent_total_compressed_message_size_bytes_sum", status: "NOT_FOUND")] == 6)
        #expect(samples[Self.key("grpc_client_attempt_rcvd_total_compressed_message_size_bytes_sum", status: "NOT_FOUND")] == 0)
        #expect(samples[Self.key("grpc_client_attempt_started_total", method: "pitlane.test.echo.Echo/Expand")] == 0)
        #expect(samples[Self.key("grpc_client_attempt_started_total", method: "other")] == 0)
    }

    @Test("under a retry policy each attempt counts: two UNAVAILABLE attempts and an OK one make 3 attempts and 1 OK call")
    func retries() async throws {
        let policy = RetryPolicy(
            maxAttempts: 5, initialBackoff: .milliseconds(1), maxBackoff: .milliseconds(4), backoffMultiplier: 2,
            retryableStatusCodes: [.unavailable])
        let config = MethodConfig(names: [MethodConfig.Name(service: "pitlane.test.echo.Echo")], executionPolicy: .retry(policy))
        let transport = InProcessTransport(serviceConfig: ServiceConfig(methodConfigs: [config]))
        let metrics = ClientMetrics(target: "in-process", methods: Pitlane_Test_Echo_Echo.Method.descriptors)
        try await Self.withEcho(EchoService(failFirstAttempts: 2), transport: transport, metrics: metrics) { echo in
            let reply = try await echo.get(.with { $0.text = "x" })
            #expect(reply.text == "x")
        }
        let samples = Self.parse(metrics.render())
        #expect(samples[Self.key("grpc_client_attempt_started_total")] == 3)
        #expect(samples[Self.key("grpc_client_attempt_duration_seconds_count", status: "UNAVAILABLE")] == 2)
        #expect(samples[Self.key("grpc_client_attempt_duration_seconds_count", status: "OK")] == 1)
        #expect(samples[Self.key("grpc_client_call_duration_seconds_count", status: "OK")] == 1)
        #expect(samples[Self.key("grpc_client_call_duration_seconds_count", status: "UNAVAILABLE")] == nil)
    }

    @Test("a call cut by its deadline ends DEADLINE_EXCEEDED, as an attempt and as a call")
    func deadline() async throws {
        let metrics = ClientMetrics(target: "in-process", methods: Pitlane_Test_Echo_Echo.Method.descriptors)
        try await Self.withEcho(metrics: metrics) { echo in
            let error = await #expect(throws: RPCError.self) {
                _ = try await echo.get(.with { $0.waitForCancellation = true }, options: .defaults.with { $0.timeout = .milliseconds(50) })
            }
            #expect(error?.code == .deadlineExceeded)
        }
        let samples = Self.parse(metrics.render())
        #expect(samples[Self.key("grpc_client_attempt_started_total")] == 1)
        #expect(samples[Self.key("grpc_client_attempt_duration_seconds_count", status: "DEADLINE_EXCEEDED")] == 1)
        #expect(samples[Self.key("grpc_client_call_duration_seconds_count", status: "DEADLINE_EXCEEDED")] == 1)
    }

    @Test("methods not named at init count as \"other\"; the target label is the client's URI")
    func otherAndTarget() {
        let metrics = ClientMetrics(target: .dns(host: "localhost", port: 8080), methods: [])
        #expect(metrics.target == "dns:///localhost:8080")
        let observer = metrics.methodObserver(for: MethodDescriptor(service: ServiceDescriptor(fullyQualifiedService: "a.B"), method: "C"))
        observer.attemptStarted()
        observer.attemptFinished(code: .ok, duration: .milliseconds(2), sentBytes: 10, receivedBytes: 2_000)
        observer.callFinished(code: .ok, duration: .milliseconds(3))
        let samples = Self.parse(metrics.render())
        let target = "dns:///localhost:8080"
        #expect(samples[Self.key("grpc_client_attempt_started_total", method: "other", target: target)] == 1)
        #expect(samples[Self.key("grpc_client_attempt_duration_seconds_sum", method: "other", status: "OK", target: target)] == 0.002)
        #expect(
            samples[
                Self.bucket(
                    Self.key("grpc_client_call_duration_seconds_bucket", method: "other", status: "OK", target: target),
                    le: "0.003")] == 1)
        #expect(
            samples[
                Self.bucket(
                    Self.key(
                        "grpc_client_attempt_rcvd_total_compressed_message_size_bytes_bucket", method: "other",
                        status: "OK", target: target), le: "1024")] == 0)
        #expect(ClientMetrics.uri(of: .ipv4(host: "127.0.0.1", port: 8090)) == "ipv4:127.0.0.1:8090")
    }
}
