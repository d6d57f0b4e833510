/// The key type of `map<string, …>` fields: a string compared and hashed by its UTF-8
/// bytes, as every other protobuf runtime compares map keys.
///
/// Swift's `String` equality is canonical (`"\u{E9}" == "e\u{301}"`), so a `[String: V]`
/// would merge two keys that C++, Java or Go keep apart, and silently lose one entry of a
/// message they wrote. With this key both stay, and a round trip keeps every byte.
///
/// ```swift
/// var labels: [ProtoStringKey: String] = ["team": "red"]
/// labels["driver"] = "Toad"          // a String subscript: Dictionary.subscript(_: String)
/// for (key, value) in labels { print(key.string, value) }
/// ```
public struct ProtoStringKey: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// The key as a `String`. Its UTF-8 bytes are exactly those the key was made from, unless
    /// it was decoded from invalid UTF-8 (see ``invalidUTF8``), which it holds repaired.
    public var string: String {
        get { storedString }
        set {
            storedString = newValue
            invalidUTF8 = nil
        }
    }

    @usableFromInline
    var storedString: String

    /// The bytes of an unverified key (proto2, `utf8_validation = NONE`) that were not valid
    /// UTF-8, as C++ keeps them; nil for every valid key. The key compares, hashes, sorts and is
    /// written by these bytes, so two such keys stay two entries and a round trip keeps them.
    public private(set) var invalidUTF8: [UInt8]?

    /// A key holding `string`, compared and hashed by its UTF-8 bytes.
    public init(_ string: String) {
        storedString = string
    }

    /// A key written as a string literal, as in `labels["team"]`.
    public init(stringLiteral value: String) {
        storedString = value
    }

    /// A key read from `bytes` without verification: invalid UTF-8 is kept beside its repair.
    @inlinable
    public init(unverified bytes: UnsafeBufferPointer<UInt8>) {
        let string = String(decoding: bytes, as: UTF8.self)
        self.init(string)
        if !UTF8Check.decodedUnchanged(string, from: bytes) { keepInvalidUTF8(Array(bytes)) }
    }

    @usableFromInline
    mutating func keepInvalidUTF8(_ bytes: [UInt8]) {
        invalidUTF8 = bytes
    }

    /// Calls `body` with the key's bytes: the invalid ones it was decoded from, or its UTF-8.
    @inlinable
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let invalidUTF8 { return try invalidUTF8.withUnsafeBufferPointer(body) }
        // Borrowed in place; see ProtoWriter.writeNonContiguousUTF8 for why not `withUTF8`.
        if let result = try storedString.utf8.withContiguousStorageIfAvailable(body) { return result }
        #if canImport(Darwin)
        var string = storedString
        return try string.withUTF8(body)
        #else
        preconditionFailure("a String on Linux always has contiguous UTF-8")
        #endif
    }

    /// How many bytes the key is written as.
    @inlinable
    public var byteCount: Int { invalidUTF8?.count ?? storedString.utf8.count }

    /// Equal when the keys have the same bytes, not merely canonically equivalent strings.
    public static func == (lhs: ProtoStringKey, rhs: ProtoStringKey) -> Bool {
        lhs.withBytes { left in
            rhs.withBytes { right in left.elementsEqual(right) }
        }
    }

    /// Hashes the key's bytes, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The key as a string.
    public var description: String { storedString }
    /// The key as a quoted, escaped string literal.
    public var debugDescription: String { storedString.debugDescription }
}

extension Dictionary where Key == ProtoStringKey {
    /// The value for a `String` key (compared by its UTF-8 bytes).
    public subscript(_ key: String) -> Value? {
        get { self[ProtoStringKey(key)] }
        set { self[ProtoStringKey(key)] = newValue }
    }

    /// A map with the entries of a `[String: Value]`.
    public init(_ entries: [String: Value]) {
        self.init(uniqueKeysWithValues: entries.map { (ProtoStringKey($0.key), $0.value) })
    }
}

/// `string` map keys, checked for valid UTF-8.
public enum ProtoStringKeyCodec: ProtoMapKeyCodec {
    /// Length-delimited: a length prefix, then the key's bytes.
    @inlinable public static var wireType: WireType { .lengthDelimited }
    /// The empty string, the key of an entry whose key field is absent.
    @inlinable public static var defaultValue: ProtoStringKey { ProtoStringKey("") }
    /// Reads a key; throws `ProtobufDecodingError` with code `invalidUTF8` when its bytes are not valid UTF-8.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> ProtoStringKey {
        ProtoStringKey(try reader.readString(validatingUTF8: true))
    }
    /// Writes the key's bytes and their length prefix (without a tag), backwards.
    @inlinable public static func write(_ value: ProtoStringKey, to writer: inout ProtoWriter) {
        value.withBytes { writer.writeRawBytes(UnsafeRawBufferPointer($0)) }
        writer.writeVarint(UInt64(value.byteCount))
    }
    /// The key's encoded size: its length prefix and bytes.
    @inlinable public static func size(of value: ProtoStringKey) -> Int {
        ProtoSize.lengthDelimited(value.byteCount)
    }
    /// Byte-wise order of the keys' bytes, as the C++ runtime sorts map keys in deterministic output.
    @inlinable public static func precedes(_ lhs: ProtoStringKey, _ rhs: ProtoStringKey) -> Bool {
        lhs.withBytes { left in rhs.withBytes { right in left.lexicographicallyPrecedes(right) } }
    }
    /// Writes the key as a JSON string.
    public static func writeJSON(_ value: ProtoStringKey, to writer: inout JSONWriter) throws { writer.writeString(value.string) }
    /// Reads a key from a JSON string.
    public static func readJSON(from reader: inout JSONReader) throws -> ProtoStringKey { ProtoStringKey(try reader.readString()) }
    /// The key itself as the JSON member name.
    public static func jsonKey(_ value: ProtoStringKey) -> String { value.string }
    /// The key a JSON member name stands for: the name itself; never nil.
    public static func value(fromJSONKey key: String) -> ProtoStringKey? { ProtoStringKey(key) }
    /// Writes the key as a quoted text-format string (bytes outside printable ASCII as octal escapes).
    public static func writeText(_ value: ProtoStringKey, to writer: inout TextFormatWriter) { value.withBytes { writer.writeQuoted($0) } }
    /// Reads a quoted text-format string as a key; throws `TextFormatDecodingError` when it is not valid UTF-8.
    public static func readText(from reader: inout TextFormatReader) throws -> ProtoStringKey {
        ProtoStringKey(try reader.readString(validatingUTF8: true))
    }
}

/// `string` map keys read without verification (proto2, `utf8_validation = NONE`).
public enum ProtoUnverifiedStringKeyCodec: ProtoMapKeyCodec {
    /// Length-delimited: a length prefix, then the key's bytes.
    @inlinable public static var wireType: WireType { .lengthDelimited }
    /// The empty string, the key of an entry whose key field is absent.
    @inlinable public static var defaultValue: ProtoStringKey { ProtoStringKey("") }
    /// Reads a key without verification: bytes that are not valid UTF-8 are kept in ``ProtoStringKey/invalidUTF8``.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> ProtoStringKey {
        ProtoStringKey(unverified: try reader.readLengthDelimited().assumingMemoryBound(to: UInt8.self))
    }
    /// Writes the key's bytes (the original ones if they were invalid UTF-8) and their length prefix, backwards.
    @inlinable public static func write(_ value: ProtoStringKey, to writer: inout ProtoWriter) {
        ProtoStringKeyCodec.write(value, to: &writer)
    }
    /// The key's encoded size: its length prefix and bytes.
    @inlinable public static func size(of value: ProtoStringKey) -> Int { ProtoStringKeyCodec.size(of: value) }
    /// Byte-wise order of the keys' bytes, as the C++ runtime sorts map keys in deterministic output.
    @inlinable public static func precedes(_ lhs: ProtoStringKey, _ rhs: ProtoStringKey) -> Bool {
        ProtoStringKeyCodec.precedes(lhs, rhs)
    }
    /// Writes the key as a JSON string (invalid UTF-8 in its repaired form).
    public static func writeJSON(_ value: ProtoStringKey, to writer: inout JSONWriter) throws {
        try ProtoStringKeyCodec.writeJSON(value, to: &writer)
    }
    /// Reads a key from a JSON string.
    public static func readJSON(from reader: inout JSONReader) throws -> ProtoStringKey { try ProtoStringKeyCodec.readJSON(from: &reader) }
    /// The key itself as the JSON member name.
    public static func jsonKey(_ value: ProtoStringKey) -> String { value.string }
    /// The key a JSON member name stands for: the name itself; never nil.
    public static func value(fromJSONKey key: String) -> ProtoStringKey? { ProtoStringKey(key) }
    /// Writes the key's bytes (the original ones if they were invalid UTF-8) as a quoted text-format string.
    public static func writeText(_ value: ProtoStringKey, to writer: inout TextFormatWriter) {
        ProtoStringKeyCodec.writeText(value, to: &writer)
    }
    /// Reads a quoted text-format string as a key; bytes that are not valid UTF-8 are kept in ``ProtoStringKey/invalidUTF8``.
    public static func readText(from reader: inout TextFormatReader) throws -> ProtoStringKey {
        try reader.readBytes().withUnsafeBufferPointer { ProtoStringKey(unverified: $0) }
    }
}
