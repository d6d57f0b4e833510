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

    public init(_ string: String) {
        storedString = string
    }

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

    public static func == (lhs: ProtoStringKey, rhs: ProtoStringKey) -> Bool {
        lhs.withBytes { left in
            rhs.withBytes { right in left.elementsEqual(right) }
        }
    }

    public func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { storedString }
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
    @inlinable public static var wireType: WireType { .lengthDelimited }
    @inlinable public static var defaultValue: ProtoStringKey { ProtoStringKey("") }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> ProtoStringKey {
        ProtoStringKey(try reader.readString(validatingUTF8: true))
    }
    @inlinable public static func write(_ value: ProtoStringKey, to writer: inout ProtoWriter) {
        value.withBytes { writer.writeRawBytes(UnsafeRawBufferPointer($0)) }
        writer.writeVarint(UInt64(value.byteCount))
    }
    @inlinable public static func size(of value: ProtoStringKey) -> Int {
        ProtoSize.lengthDelimited(value.byteCount)
    }
    @inlinable public static func precedes(_ lhs: ProtoStringKey, _ rhs: ProtoStringKey) -> Bool {
        lhs.withBytes { left in rhs.withBytes { right in left.lexicographicallyPrecedes(right) } }
    }
    public static func writeJSON(_ value: ProtoStringKey, to writer: inout JSONWriter) throws { writer.writeString(value.string) }
    public static func readJSON(from reader: inout JSONReader) throws -> ProtoStringKey { ProtoStringKey(try reader.readString()) }
    public static func jsonKey(_ value: ProtoStringKey) -> String { value.string }
    public static func value(fromJSONKey key: String) -> ProtoStringKey? { ProtoStringKey(key) }
    public static func writeText(_ value: ProtoStringKey, to writer: inout TextFormatWriter) { value.withBytes { writer.writeQuoted($0) } }
    public static func readText(from reader: inout TextFormatReader) throws -> ProtoStringKey {
        ProtoStringKey(try reader.readString(validatingUTF8: true))
    }
}

/// `string` map keys read without verification (proto2, `utf8_validation = NONE`).
public enum ProtoUnverifiedStringKeyCodec: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .lengthDelimited }
    @inlinable public static var defaultValue: ProtoStringKey { ProtoStringKey("") }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> ProtoStringKey {
        ProtoStringKey(unverified: try reader.readLengthDelimited().assumingMemoryBound(to: UInt8.self))
    }
    @inlinable public static func write(_ value: ProtoStringKey, to writer: inout ProtoWriter) {
        ProtoStringKeyCodec.write(value, to: &writer)
    }
    @inlinable public static func size(of value: ProtoStringKey) -> Int { ProtoStringKeyCodec.size(of: value) }
    @inlinable public static func precedes(_ lhs: ProtoStringKey, _ rhs: ProtoStringKey) -> Bool {
        ProtoStringKeyCodec.precedes(lhs, rhs)
    }
    public static func writeJSON(_ value: ProtoStringKey, to writer: inout JSONWriter) throws {
        try ProtoStringKeyCodec.writeJSON(value, to: &writer)
    }
    public static func readJSON(from reader: inout JSONReader) throws -> ProtoStringKey { try ProtoStringKeyCodec.readJSON(from: &reader) }
    public static func jsonKey(_ value: ProtoStringKey) -> String { value.string }
    public static func value(fromJSONKey key: String) -> ProtoStringKey? { ProtoStringKey(key) }
    public static func writeText(_ value: ProtoStringKey, to writer: inout TextFormatWriter) {
        ProtoStringKeyCodec.writeText(value, to: &writer)
    }
    public static func readText(from reader: inout TextFormatReader) throws -> ProtoStringKey {
        try reader.readBytes().withUnsafeBufferPointer { ProtoStringKey(unverified: $0) }
    }
}
