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
    CustomDebugStringConvertible {
    /// The key as a `String`; its UTF-8 bytes are exactly those the key was made from.
    public var string: String

    public init(_ string: String) {
        self.string = string
    }

    public init(stringLiteral value: String) {
        string = value
    }

    public static func == (lhs: ProtoStringKey, rhs: ProtoStringKey) -> Bool {
        lhs.string.utf8.elementsEqual(rhs.string.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { string }
    public var debugDescription: String { string.debugDescription }
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
        writer.writeString(value.string)
    }
    @inlinable public static func size(of value: ProtoStringKey) -> Int {
        ProtoSize.lengthDelimited(value.string.utf8.count)
    }
    @inlinable public static func precedes(_ lhs: ProtoStringKey, _ rhs: ProtoStringKey) -> Bool {
        lhs.string.utf8.lexicographicallyPrecedes(rhs.string.utf8)
    }
    public static func writeJSON(_ value: ProtoStringKey, to writer: inout JSONWriter) throws { writer.writeString(value.string) }
    public static func readJSON(from reader: inout JSONReader) throws -> ProtoStringKey { ProtoStringKey(try reader.readString()) }
    public static func jsonKey(_ value: ProtoStringKey) -> String { value.string }
    public static func value(fromJSONKey key: String) -> ProtoStringKey? { ProtoStringKey(key) }
    public static func writeText(_ value: ProtoStringKey, to writer: inout TextFormatWriter) { writer.writeQuoted(value.string.utf8) }
    public static func readText(from reader: inout TextFormatReader) throws -> ProtoStringKey {
        ProtoStringKey(try reader.readString(validatingUTF8: true))
    }
}

/// `string` map keys read without verification (proto2, `utf8_validation = NONE`).
public enum ProtoUnverifiedStringKeyCodec: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .lengthDelimited }
    @inlinable public static var defaultValue: ProtoStringKey { ProtoStringKey("") }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> ProtoStringKey {
        ProtoStringKey(try reader.readString(validatingUTF8: false))
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
        ProtoStringKey(try reader.readString(validatingUTF8: false))
    }
}
