import PitlaneCore

/// Writes the Prometheus text exposition format (version 0.0.4).
struct PrometheusText {
    /// gRPC status codes, 0 (OK) to 16 (UNAUTHENTICATED): one counter block each.
    static let statusCodes = 17

    private(set) var text = ""

    mutating func header(_ name: String, type: String, help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: String) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + value + "\n"
    }

    /// A histogram family by method and status: each method's counters hold, after one
    /// leading slot, a block of `perStatus` counters per status code, the histogram at
    /// `offset` in each block. Only (method, status) pairs that happened are written.
    mutating func statusHistograms(
        _ name: String, help: String, methods: [(label: String, counters: AtomicCounters)],
        labels: [(String, String)] = [], layout: HistogramLayout, offset: Int, perStatus: Int
    ) {
        header(name, type: "histogram", help: help)
        for method in methods {
            for code in 0..<Self.statusCodes {
                let series = [("grpc_method", method.label)] + labels + [("grpc_status", Status.Code(rawValue: code)!.description)]
                histogram(name, series, layout: layout, counters: method.counters, base: 1 + code * perStatus + offset)
            }
        }
    }

    /// One series of a histogram whose counters start at `base` in `counters` (laid out by
    /// `layout`): cumulative buckets in `le` order, `+Inf` equal to the count, the sum and the
    /// count. A series that never counted anything is left out unless `always`.
    mutating func histogram(
        _ name: String, _ labels: [(String, String)], layout: HistogramLayout,
        counters: AtomicCounters, base: Int, always: Bool = false
    ) {
        let count = counters.load(base + layout.bounds.count + 2)
        guard count > 0 || always else { return }
        var cumulative = 0
        for (index, bound) in layout.bounds.enumerated() {
            cumulative += counters.load(base + index)
            sample(name + "_bucket", labels + [("le", layout.label(bound))], String(cumulative))
        }
        sample(name + "_bucket", labels + [("le", "+Inf")], String(count))
        sample(name + "_sum", labels, layout.label(counters.load(base + layout.bounds.count + 1)))
        sample(name + "_count", labels, String(count))
    }

    static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A float as Prometheus reads it, without a trailing ".0" for whole numbers.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
