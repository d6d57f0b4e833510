/// Where a span sits in a trace, as W3C Trace Context carries it between processes in the
/// `traceparent` header: `00-<trace id, 32 hex>-<parent span id, 16 hex>-<flags, 2 hex>`,
/// with the vendors' `tracestate` beside it.
public struct TraceContext: Sendable, Hashable {
    /// 16 bytes, not all zero.
    public var traceID: [UInt8]
    /// 8 bytes, not all zero.
    public var spanID: [UInt8]
    /// Bit 0: sampled.
    public var flags: UInt8
    /// The `tracestate` header's list (`vendor=value,…`), well-formed, or empty for none; it
    /// stays the same along the trace unless a vendor changes its own entry.
    public var traceState: String

    /// A new trace's first span, sampled.
    public static func newTrace() -> TraceContext {
        TraceContext(traceID: randomID(16), spanID: randomID(8), flags: 1)
    }

    /// A span in the same trace, whose parent is this one.
    public func child() -> TraceContext {
        TraceContext(traceID: traceID, spanID: Self.randomID(8), flags: flags, traceState: traceState)
    }

    /// Parses a `traceparent` value; nil when malformed (the receiver then starts a new trace).
    public init?(traceparent: String) {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[0] != "ff",
              let version = Self.bytes(parts[0]), let trace = Self.bytes(parts[1]), trace.count == 16,
              let span = Self.bytes(parts[2]), span.count == 8, let flags = Self.bytes(parts[3]), flags.count == 1,
              trace.contains(where: { $0 != 0 }), span.contains(where: { $0 != 0 }),
              version[0] != 0 || parts.count == 4
        else { return nil }
        self.init(traceID: trace, spanID: span, flags: flags[0])
    }

    /// Parses a `traceparent` value and the `tracestate` values that came with it; nil when the
    /// `traceparent` is malformed (its `tracestate` is then ignored, as W3C Trace Context
    /// says). A malformed `tracestate` alone is dropped: the context has none.
    public init?(traceparent: String, tracestate: [String]) {
        self.init(traceparent: traceparent)
        traceState = TraceState.validated(tracestate) ?? ""
    }

    public init(traceID: [UInt8], spanID: [UInt8], flags: UInt8, traceState: String = "") {
        self.traceID = traceID
        self.spanID = spanID
        self.flags = flags
        self.traceState = traceState
    }

    /// The `traceparent` header value naming this span as the parent.
    public var traceparent: String {
        "00-\(Self.hex(traceID))-\(Self.hex(spanID))-\(Self.hex([flags]))"
    }

    public var traceIDHex: String { Self.hex(traceID) }

    /// The span the current task works for: ``TracingServerInterceptor`` sets it while a
    /// handler runs (and the tasks it starts inherit it), and ``TracingClientInterceptor``
    /// makes the calls made there children of it, forwarding its `tracestate`.
    public static var current: TraceContext? { currentSpan.get() }

    /// The task-local binding behind ``current``.
    static let currentSpan = TaskLocal<TraceContext?>(wrappedValue: nil)

    static func randomID(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: count)
        repeat {
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        } while !bytes.contains(where: { $0 != 0 })
        return bytes
    }

    /// Lowercase hex only, as the header requires.
    private static func bytes(_ text: Substring) -> [UInt8]? {
        guard text.utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in text.utf8 {
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return bytes
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
