import PitlaneCore

/// A client's RPC metrics with gRPC's OpenTelemetry names and labels (gRFC A66), exposed in
/// the Prometheus text format as ``ServerMetrics`` exposes the server's:
///
/// | gRFC A66 | Prometheus | labels |
/// |---|---|---|
/// | `grpc.client.attempt.started` | `grpc_client_attempt_started_total` (counter) | `grpc_method`, `grpc_target` |
/// | `grpc.client.attempt.duration` | `grpc_client_attempt_duration_seconds` | and `grpc_status` |
/// | `grpc.client.attempt.sent_total_compressed_message_size` | `grpc_client_attempt_sent_total_compressed_message_size_bytes` | and `grpc_status` |
/// | `grpc.client.attempt.rcvd_total_compressed_message_size` | `grpc_client_attempt_rcvd_total_compressed_message_size_bytes` | and `grpc_status` |
/// | `grpc.client.call.duration` | `grpc_client_call_duration_seconds` | and `grpc_status` |
///
/// A call makes one attempt, or more under a retry or hedging policy (the service config's or
/// the call options'); each attempt counts. Message sizes are as on the wire, compressed when
/// the call compresses (the transport's `MessageWireCounts`; serialized sizes in process), as
/// on the server.
///
/// Counting costs a few relaxed atomic adds and no lock: each method named at init has its
/// counters from the start and a call looks them up once; any other method counts as
/// `"other"` (gRFC A66's label for methods that are not generated).
///
/// One line makes a client count its calls:
///
/// ```swift
/// let metrics = ClientMetrics(target: transport.target, methods: SwiftKartService.Method.descriptors)
/// try await withGRPCClient(transport: transport, observer: metrics) { client in … }
/// print(metrics.render())
/// ```
public final class ClientMetrics: ClientCallObserver {
    /// One method's counters: attempts started, then per status code the attempts' durations,
    /// sent and received sizes, and the calls' durations.
    private final class MethodCounters: ClientMethodObserver {
        let label: String
        let counters = AtomicCounters(count: 1 + ClientMetrics.statusCodes * ClientMetrics.perStatus)

        init(label: String) {
            self.label = label
        }

        func attemptStarted() {
            counters.add(1, at: 0)
        }

        func attemptFinished(code: Status.Code, duration: Duration, sentBytes: Int, receivedBytes: Int) {
            let base = ClientMetrics.base(code)
            HistogramLayout.latency.record(HistogramLayout.nanoseconds(duration), in: counters, at: base + ClientMetrics.attemptDuration)
            HistogramLayout.size.record(sentBytes, in: counters, at: base + ClientMetrics.sentSize)
            HistogramLayout.size.record(receivedBytes, in: counters, at: base + ClientMetrics.receivedSize)
        }

        func callFinished(code: Status.Code, duration: Duration) {
            HistogramLayout.latency.record(
                HistogramLayout.nanoseconds(duration), in: counters,
                at: ClientMetrics.base(code) + ClientMetrics.callDuration)
        }
    }

    private static let statusCodes = PrometheusText.statusCodes
    // Where each histogram sits within a status code's counters.
    private static let attemptDuration = 0
    private static let sentSize = HistogramLayout.latency.width
    private static let receivedSize = sentSize + HistogramLayout.size.width
    private static let callDuration = receivedSize + HistogramLayout.size.width
    private static let perStatus = callDuration + HistogramLayout.latency.width

    private static func base(_ code: Status.Code) -> Int {
        1 + code.rawValue * perStatus
    }

    /// The `grpc_target` label: the target the client was made for.
    public let target: String
    private let methods: [MethodDescriptor: MethodCounters]
    private let other = MethodCounters(label: "other")

    /// Counters for calls to `target` (its URI, as `grpc_target` reads, e.g.
    /// `dns:///localhost:8080`) of the `methods` named (a generated service's
    /// `Method.descriptors`); other methods count as `"other"`.
    public init(target: String, methods: [MethodDescriptor]) {
        self.target = target
        var counters: [MethodDescriptor: MethodCounters] = [:]
        for method in methods { counters[method] = MethodCounters(label: method.fullyQualifiedMethod) }
        self.methods = counters
    }

    // MARK: ClientCallObserver

    /// The counters of `method`, or `"other"`'s.
    public func methodObserver(for method: MethodDescriptor) -> any ClientMethodObserver {
        methods[method] ?? other
    }

    // MARK: Exposition

    /// The metrics in the Prometheus text exposition format (version 0.0.4). Only (method,
    /// status) pairs that happened have histogram series: a scrape stays small.
    public func render() -> String {
        var out = PrometheusText()
        let all = methods.values.sorted { $0.label < $1.label } + [other]
        out.header("grpc_client_attempt_started_total", type: "counter", help: "RPC attempts started, by method and target.")
        for method in all {
            out.sample(
                "grpc_client_attempt_started_total", [("grpc_method", method.label), ("grpc_target", target)],
                String(method.counters.load(0)))
        }
        let series = all.map { (label: $0.label, counters: $0.counters) }
        let target = [("grpc_target", target)]
        out.statusHistograms(
            "grpc_client_attempt_duration_seconds",
            help: "Time from the start of an RPC attempt to its status, by method, target and status.",
            methods: series, labels: target, layout: .latency, offset: Self.attemptDuration, perStatus: Self.perStatus)
        out.statusHistograms(
            "grpc_client_attempt_sent_total_compressed_message_size_bytes",
            help: "Bytes of messages an RPC attempt sent, as on the wire (compressed).",
            methods: series, labels: target, layout: .size, offset: Self.sentSize, perStatus: Self.perStatus)
        out.statusHistograms(
            "grpc_client_attempt_rcvd_total_compressed_message_size_bytes",
            help: "Bytes of messages an RPC attempt received, as on the wire (compressed).",
            methods: series, labels: target, layout: .size, offset: Self.receivedSize, perStatus: Self.perStatus)
        out.statusHistograms(
            "grpc_client_call_duration_seconds",
            help: "Time from the start of an RPC to the status its caller sees, over all its attempts.",
            methods: series, labels: target, layout: .latency, offset: Self.callDuration, perStatus: Self.perStatus)
        return out.text
    }
}
