/// Writes the Prometheus text exposition format (version 0.0.4).
struct PrometheusText {
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

    /// One series of a histogram whose counters start at `base` in `counters` (laid out by
    /// `layout`): cumulative buckets in `le` order, `+Inf` equal to the count, the sum and the
    /// count. A series that never counted anything is left out unless `always`.
    mutating func histogram(_ name: String, _ labels: [(String, String)], layout: HistogramLayout,
                            counters: AtomicCounters, base: Int, always: Bool = false) {
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
