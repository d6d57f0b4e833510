import PitlaneCore
import Synchronization

/// A server's RPC metrics with gRPC's OpenTelemetry names and labels, exposed in the
/// Prometheus text format: `grpc.server.call.started` (a counter per method),
/// `grpc.server.call.duration` and the sent and received message sizes (histograms per
/// method and status), plus the gauges the server adds (open connections, …).
///
/// Counting costs a few relaxed atomic adds per call, no lock and no lookup: every method the
/// services register has its counters from the start, found by the tag the server hands back
/// with each call (``tag(for:)``), and any other method counts as `"other"`.
///
/// ```swift
/// let metrics = ServerMetrics(services: services)
/// let server = GRPCServer(transport: transport, services: services, observer: metrics)
/// config.httpEndpoints["/metrics"] = metrics.endpoint
/// ```
public final class ServerMetrics: ServerCallObserver {
    /// One method's counters: started, then per status code a duration, a received-size and
    /// a sent-size histogram.
    private struct MethodCounters: Sendable {
        let label: String
        let counters: AtomicCounters
    }

    private static let statusCodes = PrometheusText.statusCodes
    private static var perStatus: Int { HistogramLayout.latency.width + 2 * HistogramLayout.size.width }

    /// Each method's index in `counters`.
    private let tags: [MethodDescriptor: Int]
    /// Every method's counters, sorted by label, then `other`'s.
    private let counters: [MethodCounters]
    private var other: MethodCounters { counters[counters.count - 1] }
    private let gauges = Mutex<[(name: String, help: String, value: @Sendable () -> Int)]>([])
    private let histograms = Mutex<[(name: String, help: String, histogram: LatencyHistogram)]>([])

    /// Counters for every method `services` register.
    public init(services: [any RegistrableRPCService]) {
        var router = RPCRouter()
        for service in services { service.registerMethods(with: &router) }
        let methods = router.methods.sorted { $0.fullyQualifiedMethod < $1.fullyQualifiedMethod }
        tags = Dictionary(uniqueKeysWithValues: methods.enumerated().map { ($0.element, $0.offset) })
        counters = methods.map { Self.counters(label: $0.fullyQualifiedMethod) } + [Self.counters(label: "other")]
    }

    private static func counters(label: String) -> MethodCounters {
        MethodCounters(label: label, counters: AtomicCounters(count: 1 + statusCodes * perStatus))
    }

    /// Adds a gauge read at each scrape, such as the transport's open connections.
    public func addGauge(_ name: String, help: String, value: @escaping @Sendable () -> Int) {
        gauges.withLock { $0.append((name, help, value)) }
    }

    /// Adds a service's own latency histogram (in seconds), written after the gauges at each
    /// scrape, such as the order tracker's `orders_publish_latency_seconds`.
    public func addHistogram(_ name: String, help: String, _ histogram: LatencyHistogram) {
        histograms.withLock { $0.append((name, help, histogram)) }
    }

    // MARK: ServerCallObserver

    /// The index of `method`'s counters; methods the services did not register, and nil, get `other`'s.
    public func tag(for method: MethodDescriptor?) -> Int {
        method.flatMap { tags[$0] } ?? counters.count - 1
    }

    /// Counts a started call of `method` in `grpc.server.call.started`.
    public func callStarted(_ method: ObservedMethod) {
        counters(for: method).counters.add(1, at: 0)
    }

    /// Records a finished call's duration and its received and sent message bytes under `method` and `code`.
    public func callFinished(_ method: ObservedMethod, code: Status.Code, duration: Duration, receivedBytes: Int, sentBytes: Int) {
        let counters = counters(for: method).counters
        let base = 1 + code.rawValue * Self.perStatus
        HistogramLayout.latency.record(HistogramLayout.nanoseconds(duration), in: counters, at: base)
        HistogramLayout.size.record(sentBytes, in: counters, at: base + HistogramLayout.latency.width)
        HistogramLayout.size.record(receivedBytes, in: counters, at: base + HistogramLayout.latency.width + HistogramLayout.size.width)
    }

    /// A tag out of range (not one this observer gave) counts as `other`.
    private func counters(for method: ObservedMethod) -> MethodCounters {
        counters.indices.contains(method.tag) ? counters[method.tag] : other
    }

    // MARK: Exposition

    /// Calls started and not finished yet, over every method.
    public var callsInProgress: Int {
        counters.reduce(0) { total, method in
            let finished = (0..<Self.statusCodes).reduce(0) { sum, code in
                sum + method.counters.load(1 + code * Self.perStatus + HistogramLayout.latency.width - 1)
            }
            return total + method.counters.load(0) - finished
        }
    }

    /// The metrics in the Prometheus text exposition format.
    public func render() -> String {
        var out = PrometheusText()
        let all = counters
        out.header("grpc_server_call_started_total", type: "counter", help: "RPCs started, by method.")
        for method in all { out.sample("grpc_server_call_started_total", [("grpc_method", method.label)], String(method.counters.load(0))) }
        let series = all.map { (label: $0.label, counters: $0.counters) }
        out.statusHistograms(
            "grpc_server_call_duration_seconds", help: "Time from the start of an RPC to its status, by method and status.",
            methods: series, layout: .latency, offset: 0, perStatus: Self.perStatus)
        // gRFC A66 counts bytes as they crossed the wire, compressed: the transport's counts
        // (MessageWireCounts), or serialized sizes in process, where nothing is compressed.
        out.statusHistograms(
            "grpc_server_call_sent_total_compressed_message_size_bytes",
            help: "Bytes of messages an RPC sent, as on the wire (compressed).",
            methods: series, layout: .size, offset: HistogramLayout.latency.width, perStatus: Self.perStatus)
        out.statusHistograms(
            "grpc_server_call_rcvd_total_compressed_message_size_bytes",
            help: "Bytes of messages an RPC received, as on the wire (compressed).", methods: series,
            layout: .size, offset: HistogramLayout.latency.width + HistogramLayout.size.width, perStatus: Self.perStatus)
        out.header("pitlane_server_streams_open", type: "gauge", help: "RPC streams open: calls started and not finished.")
        out.sample("pitlane_server_streams_open", [], String(callsInProgress))
        for gauge in gauges.withLock({ $0 }) {
            out.header(gauge.name, type: "gauge", help: gauge.help)
            out.sample(gauge.name, [], String(gauge.value()))
        }
        for entry in histograms.withLock({ $0 }) {
            out.header(entry.name, type: "histogram", help: entry.help)
            out.histogram(entry.name, [], layout: .latency, counters: entry.histogram.counters, base: 0, always: true)
        }
        return out.text
    }

}
