import Synchronization

/// A fixed number of counters that many threads add to without a lock: the storage of a
/// method's metrics. Reads are relaxed, which a scrape tolerates (a sample is a moment).
final class AtomicCounters: @unchecked Sendable {
    // @unchecked: the counters are Atomics, allocated once and freed in deinit.
    private let counters: UnsafeMutablePointer<Atomic<Int>>
    let count: Int

    init(count: Int) {
        self.count = count
        counters = .allocate(capacity: count)
        for index in 0..<count { (counters + index).initialize(to: Atomic(0)) }
    }

    deinit {
        counters.deinitialize(count: count)
        counters.deallocate()
    }

    func add(_ value: Int, at index: Int) {
        counters[index].add(value, ordering: .relaxed)
    }

    func load(_ index: Int) -> Int {
        counters[index].load(ordering: .relaxed)
    }
}

/// Bucket bounds and where a histogram's counters sit in an ``AtomicCounters``: one counter
/// per bucket (not cumulative; the exposition adds them up), then the sum, then the count.
struct HistogramLayout: Sendable {
    /// Upper bounds, ascending, in the histogram's integer unit (nanoseconds, bytes).
    let bounds: [Int]
    /// How a bound reads in the exposition (seconds for durations).
    let label: @Sendable (Int) -> String

    var width: Int { bounds.count + 3 }  // the buckets, +Inf, the sum, the count

    func record(_ value: Int, in counters: AtomicCounters, at base: Int) {
        // Few buckets: a linear scan is a handful of compares on the common small values.
        var bucket = bounds.count
        for (index, bound) in bounds.enumerated() where value <= bound {
            bucket = index
            break
        }
        counters.add(1, at: base + bucket)
        counters.add(value, at: base + bounds.count + 1)
        counters.add(1, at: base + bounds.count + 2)
    }

    /// A duration in whole nanoseconds, the latency layout's unit; never negative.
    static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }

    /// gRPC's OpenTelemetry latency buckets, in nanoseconds.
    static let latency = HistogramLayout(
        bounds: [
            0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008,
            0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4,
            0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100,
        ].map { Int(($0 * 1e9).rounded()) },
        label: { PrometheusText.number(Double($0) / 1e9) })

    /// gRPC's OpenTelemetry message size buckets, in bytes.
    static let size = HistogramLayout(
        bounds: [
            0, 1024, 2048, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864,
            268_435_456, 1_073_741_824, 4_294_967_296,
        ],
        label: { String($0) })
}
