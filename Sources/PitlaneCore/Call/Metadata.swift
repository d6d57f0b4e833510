/// gRPC metadata: key-value pairs sent as HTTP/2 headers and trailers.
///
/// Keys are case-insensitive (stored lower-cased) and may repeat. Keys ending in `-bin`
/// carry binary values (base64 on the wire); all others carry ASCII strings. Headers gRPC
/// itself uses (`content-type`, `grpc-status`, `:path`, ...) are not metadata: adding them
/// does nothing, and transports keep them out.
///
/// ```swift
/// var metadata: Metadata = ["authorization": "Bearer abc"]
/// metadata.addBinary([1, 2, 3], forKey: "trace-bin")
/// let token = metadata[stringValues: "authorization"].first
/// ```
public struct Metadata: Sendable, Hashable, ExpressibleByDictionaryLiteral, Sequence, CustomStringConvertible {
    /// A metadata value: text for ordinary keys, bytes for `-bin` keys.
    public enum Value: Sendable, Hashable, CustomStringConvertible {
        case string(String)
        case binary([UInt8])

        public var description: String {
            switch self {
            case .string(let text): "\"\(text)\""
            case .binary(let bytes): "\(bytes.count) bytes"
            }
        }
    }

    private var elements: [(key: String, value: Value)] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, Value)...) {
        for (key, value) in elements { add(value, forKey: key) }
    }

    /// Whether gRPC or HTTP/2 reserve the header name, so it cannot be metadata.
    public static func isReserved(_ key: String) -> Bool {
        // By first letter: most keys are decided without a string comparison.
        switch key.utf8.first {
        case UInt8(ascii: ":"): true
        case UInt8(ascii: "g"): key.hasPrefix("grpc-") && key != statusDetailsKey
        case UInt8(ascii: "c"): key == "content-type" || key == "content-length" || key == "connection"
        case UInt8(ascii: "t"): key == "te"
        case UInt8(ascii: "u"): key == "user-agent"
        case UInt8(ascii: "h"): key == "host"
        default: false
        }
    }

    /// The one `grpc-` key applications set: a serialized `google.rpc.Status` in the trailers
    /// of a failed RPC (rich error details).
    public static let statusDetailsKey = "grpc-status-details-bin"

    /// `key` as metadata keeps it: lowercased (HTTP/2 header names are). Most keys given are
    /// lowercase already, and are then returned as they are, without a new string.
    static func normalized(_ key: String) -> String {
        for byte in key.utf8 where byte >= UInt8(ascii: "A") && (byte <= UInt8(ascii: "Z") || byte >= 0x80) {
            return key.lowercased()
        }
        return key
    }

    public var count: Int { elements.count }
    public var isEmpty: Bool { elements.isEmpty }

    /// Adds a value; binary values belong under `-bin` keys and text values elsewhere.
    public mutating func add(_ value: Value, forKey key: String) {
        let key = Self.normalized(key)
        guard !Self.isReserved(key) else { return }
        elements.append((key, value))
    }

    public mutating func addString(_ value: String, forKey key: String) { add(.string(value), forKey: key) }

    public mutating func addBinary(_ value: [UInt8], forKey key: String) { add(.binary(value), forKey: key) }

    /// Replaces every value of `key` with one value.
    public mutating func replaceOrAddString(_ value: String, forKey key: String) {
        removeAllValues(forKey: key)
        addString(value, forKey: key)
    }

    public mutating func removeAllValues(forKey key: String) {
        let key = Self.normalized(key)
        elements.removeAll { $0.key == key }
    }

    /// Every value of `key`, in the order added.
    public subscript(_ key: String) -> [Value] {
        let key = Self.normalized(key)
        return elements.filter { $0.key == key }.map(\.value)
    }

    /// The text values of `key`.
    public subscript(stringValues key: String) -> [String] {
        self[key].compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    /// The binary values of `key`.
    public subscript(binaryValues key: String) -> [[UInt8]] {
        self[key].compactMap { if case .binary(let bytes) = $0 { bytes } else { nil } }
    }

    public mutating func add(contentsOf other: Metadata) {
        elements.append(contentsOf: other.elements)
    }

    public func makeIterator() -> some IteratorProtocol<(key: String, value: Value)> {
        elements.makeIterator()
    }

    public static func == (lhs: Metadata, rhs: Metadata) -> Bool {
        lhs.elements.elementsEqual(rhs.elements) { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for element in elements {
            hasher.combine(element.key)
            hasher.combine(element.value)
        }
    }

    public var description: String {
        "[" + elements.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
    }
}

extension Metadata.Value: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}
