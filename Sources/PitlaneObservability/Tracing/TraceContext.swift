/// Where a span sits in a trace, as W3C Trace Context carries it between processes in the
/// `traceparent` header: `00-<trace id, 32 hex>-<parent span id, 16 hex>-<flags, 2 hex>`,
/// with the vendors' `tracestate` beside it.
///
/// The ids are held as integers (the trace id's two big-endian halves), so that making,
/// copying and comparing a context allocates nothing; ``traceID`` and ``spanID`` give their
/// bytes, as OTLP carries them.
public struct TraceContext: Sendable, Hashable {
    /// The trace id's first and last 8 bytes, big-endian; not both zero.
    var traceIDHigh: UInt64
    var traceIDLow: UInt64
    /// The span id's 8 bytes, big-endian; not zero.
    var spanIDBits: UInt64
    /// Bit 0: sampled.
    public var flags: UInt8
    /// The `tracestate` header's list (`vendor=value,…`), well-formed, or empty for none; it
    /// stays the same along the trace unless a vendor changes its own entry.
    public var traceState: String

    /// The trace id: 16 bytes, not all zero.
    public var traceID: [UInt8] { Self.bytes(traceIDHigh, traceIDLow) }
    /// The span id: 8 bytes, not all zero.
    public var spanID: [UInt8] { Self.bytes(spanIDBits) }

    /// A new trace's first span, sampled.
    public static func newTrace() -> TraceContext {
        let (high, low, span) = RandomIDs.draw { ids in (ids.next(), ids.next(), ids.nextNonZero()) }
        // A trace id of all zeros is invalid: a 1 in 2^128 draw, made valid rather than drawn again.
        return TraceContext(traceIDHigh: high, traceIDLow: high | low == 0 ? 1 : low, spanIDBits: span, flags: 1, traceState: "")
    }

    /// A span in the same trace, whose parent is this one.
    public func child() -> TraceContext {
        var child = self
        child.spanIDBits = RandomIDs.draw { $0.nextNonZero() }
        return child
    }

    /// Parses a `traceparent` value; nil when malformed (the receiver then starts a new trace).
    /// Version `00` is exactly four fields; a later version may add fields after a `-`.
    public init?(traceparent: String) {
        var text = traceparent
        guard let parsed = text.withUTF8(Self.parse) else { return nil }
        self = parsed
    }

    /// Parses a `traceparent` value and the `tracestate` values that came with it; nil when the
    /// `traceparent` is malformed (its `tracestate` is then ignored, as W3C Trace Context
    /// says). A malformed `tracestate` alone is dropped: the context has none.
    public init?(traceparent: String, tracestate: [String]) {
        self.init(traceparent: traceparent)
        traceState = TraceState.validated(tracestate) ?? ""
    }

    /// - Precondition: `traceID` is 16 bytes and `spanID` 8.
    public init(traceID: [UInt8], spanID: [UInt8], flags: UInt8, traceState: String = "") {
        precondition(traceID.count == 16 && spanID.count == 8, "a trace id is 16 bytes and a span id 8")
        self.init(
            traceIDHigh: Self.integer(traceID[0..<8]), traceIDLow: Self.integer(traceID[8..<16]),
            spanIDBits: Self.integer(spanID[...]), flags: flags, traceState: traceState)
    }

    init(traceIDHigh: UInt64, traceIDLow: UInt64, spanIDBits: UInt64, flags: UInt8, traceState: String) {
        self.traceIDHigh = traceIDHigh
        self.traceIDLow = traceIDLow
        self.spanIDBits = spanIDBits
        self.flags = flags
        self.traceState = traceState
    }

    /// The `traceparent` header value naming this span as the parent.
    public var traceparent: String {
        String(unsafeUninitializedCapacity: 55) { text in
            var at = 0
            func put(_ byte: UInt8) {
                text[at] = byte
                at += 1
            }
            func put(_ value: UInt64, digits: Int) {
                for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) { put(Self.digit(value >> UInt64(shift))) }
            }
            put(UInt8(ascii: "0"))
            put(UInt8(ascii: "0"))
            put(UInt8(ascii: "-"))
            put(traceIDHigh, digits: 16)
            put(traceIDLow, digits: 16)
            put(UInt8(ascii: "-"))
            put(spanIDBits, digits: 16)
            put(UInt8(ascii: "-"))
            put(UInt64(flags), digits: 2)
            return at
        }
    }

    /// The trace id in 32 lowercase hex digits, as logs print it.
    public var traceIDHex: String {
        String(unsafeUninitializedCapacity: 32) { text in
            for index in 0..<32 {
                let half = index < 16 ? traceIDHigh : traceIDLow
                text[index] = Self.digit(half >> UInt64(60 - (index % 16) * 4))
            }
            return 32
        }
    }

    /// The span the current task works for: ``TracingServerInterceptor`` sets it while a
    /// handler runs (and the tasks it starts inherit it), and ``TracingClientInterceptor``
    /// makes the calls made there children of it, forwarding its `tracestate`.
    public static var current: TraceContext? { currentSpan.get() }

    /// The task-local binding behind ``current``.
    static let currentSpan = TaskLocal<TraceContext?>(wrappedValue: nil)

    // MARK: The header's bytes

    private static func parse(_ text: UnsafeBufferPointer<UInt8>) -> TraceContext? {
        // vv-<32>-<16>-ff: 55 bytes, dashes at 2, 35 and 52.
        guard text.count >= 55, text[2] == UInt8(ascii: "-"), text[35] == UInt8(ascii: "-"), text[52] == UInt8(ascii: "-"),
            let version = hex(text, from: 0, count: 2), version != 0xff,
            version != 0 ? text.count == 55 || text[55] == UInt8(ascii: "-") : text.count == 55,
            let high = hex(text, from: 3, count: 16), let low = hex(text, from: 19, count: 16), high | low != 0,
            let span = hex(text, from: 36, count: 16), span != 0,
            let flags = hex(text, from: 53, count: 2)
        else { return nil }
        return TraceContext(traceIDHigh: high, traceIDLow: low, spanIDBits: span, flags: UInt8(flags), traceState: "")
    }

    /// `count` lowercase hex digits from `start`; nil at any other byte (the header allows no
    /// uppercase).
    private static func hex(_ text: UnsafeBufferPointer<UInt8>, from start: Int, count: Int) -> UInt64? {
        var value: UInt64 = 0
        for index in start..<start + count {
            let byte = text[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    /// The lowercase hex digit of `value`'s low four bits.
    private static func digit(_ value: UInt64) -> UInt8 {
        let nibble = UInt8(truncatingIfNeeded: value & 15)
        return nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// The words' bytes, big-endian, in one array.
    private static func bytes(_ words: UInt64...) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: words.count * 8) { bytes, count in
            for (index, word) in words.enumerated() {
                for byte in 0..<8 { bytes[index * 8 + byte] = UInt8(truncatingIfNeeded: word >> UInt64(56 - byte * 8)) }
            }
            count = words.count * 8
        }
    }

    private static func integer(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
