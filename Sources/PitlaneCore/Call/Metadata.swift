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
        /// A text value, for keys that do not end in `-bin`.
        case string(String)
        /// A binary value, for keys ending in `-bin`; base64-encoded on the wire.
        case binary([UInt8])

        /// The value for logs: quoted text, or the byte count of binary values.
        public var description: String {
            switch self {
            case .string(let text): "\"\(text)\""
            case .binary(let bytes): "\(bytes.count) bytes"
            }
        }
    }

    private var elements: [(key: String, value: Value)] = []

    /// Creates empty metadata.
    public init() {}

    /// Creates metadata from a literal, adding the pairs in order; reserved keys are dropped.
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

    /// The number of key-value pairs, counting each value of a repeated key.
    public var count: Int { elements.count }
    /// Whether there are no key-value pairs.
    public var isEmpty: Bool { elements.isEmpty }

    /// Adds a value; binary values belong under `-bin` keys and text values elsewhere.
    public mutating func add(_ value: Value, forKey key: String) {
        let key = Self.normalized(key)
        guard !Self.isReserved(key) else { return }
        elements.append((key, value))
    }

    /// Adds a text value under `key`, keeping any values it already has.
    public mutating func addString(_ value: String, forKey key: String) { add(.string(value), forKey: key) }

    /// Adds a binary value under `key`, which should end in `-bin`, keeping any values it already has.
    public mutating func addBinary(_ value: [UInt8], forKey key: String) { add(.binary(value), forKey: key) }

    /// Replaces every value of `key` with one value.
    public mutating func replaceOrAddString(_ value: String, forKey key: String) {
        removeAllValues(forKey: key)
        addString(value, forKey: key)
    }

    /// Removes every value of `key`; the key matches whatever its case.
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

    /// Appends every pair of `other`, after the pairs already here.
    public mutating func add(contentsOf other: Metadata) {
        elements.append(contentsOf: other.elements)
    }

    /// Iterates over the key-value pairs in the order they were added, keys lowercased.
    public func makeIterator() -> some IteratorProtocol<(key: String, value: Value)> {
        elements.makeIterator()
    }

    /// Whether both hold the same pairs in the same order.
    public static func == (lhs: Metadata, rhs: Metadata) -> Bool {
        lhs.elements.elementsEqual(rhs.elements) { $0.key == $1.key && $0.value == $1.value }
    }

    /// Hashes the pairs in order.
    public func hash(into hasher: inout Hasher) {
        for element in elements {
            hasher.combine(element.key)
            hasher.combine(element.value)
        }
    }

    /// The pairs as `[key: value, ...]`, for logs.
    public var description: String {
        "[" + elements.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
    }
}

extension Metadata.Value: ExpressibleByStringLiteral {
    /// Creates a text value from a string literal.
    public init(stringLiteral value: String) { self = .string(value) }
}
