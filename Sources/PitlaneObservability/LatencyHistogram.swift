/// Durations with gRPC's OpenTelemetry latency buckets (0 to 100 s), recorded without a lock:
/// a service's own latency, exposed in seconds by ``ServerMetrics/addHistogram(_:help:_:)``.
///
/// ```swift
/// let publishLatency = LatencyHistogram()
/// metrics.addHistogram("orders_publish_latency_seconds", help: "…", publishLatency)
/// publishLatency.record(clock.now - received)
/// ```
public final class LatencyHistogram: Sendable {
    let counters = AtomicCounters(count: HistogramLayout.latency.width)

    /// An empty histogram; safe to record into from any thread.
    public init() {}

    /// Adds one duration (a negative one counts as zero).
    public func record(_ duration: Duration) {
        HistogramLayout.latency.record(HistogramLayout.nanoseconds(duration), in: counters, at: 0)
    }

    /// Durations recorded so far.
    public var count: Int {
        counters.load(HistogramLayout.latency.bounds.count + 2)
    }
}
