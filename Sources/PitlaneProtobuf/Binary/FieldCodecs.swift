/// How one protobuf field type reads, writes and measures its values.
///
/// Generated code names a codec per field (`ProtoInt32.self`, `ProtoMessageCodec<Race>.self`)
/// and passes it to the generic helpers on `ProtoReader`, `ProtoWriter` and `ProtoSize`;
/// everything is `@inlinable`, so each use specialises to straight-line code.
public protocol ProtoFieldCodec {
    associatedtype Value: Hashable & Sendable
    /// The wire type of one element.
    static var wireType: WireType { get }
    /// The encoded size of every value, for fixed-width types; nil for the others.
    static var fixedWidth: Int? { get }
    /// The value of an absent field, as map entries need it.
    static var defaultValue: Value { get }
    static func read(from reader: inout ProtoReader) throws -> Value
    /// Reads a value over an existing one: replaces scalars, merges messages.
    static func merge(from reader: inout ProtoReader, into value: inout Value) throws
    /// Writes the value (without its tag), backwards.
    static func write(_ value: Value, to writer: inout ProtoWriter)
    /// The encoded size of the value without its tag.
    static func size(of value: Value) -> Int
    /// Writes the value in the proto3 JSON mapping.
    static func writeJSON(_ value: Value, to writer: inout JSONWriter) throws
    /// Reads a value in the proto3 JSON mapping (`null` is handled by the caller).
    static func readJSON(from reader: inout JSONReader) throws -> Value
    /// Whether values are messages: `name { … }` in text format, rather than `name: value`.
    static var isTextMessage: Bool { get }
    /// Writes the value in text format.
    static func writeText(_ value: Value, to writer: inout TextFormatWriter)
    /// Reads a value in text format.
    static func readText(from reader: inout TextFormatReader) throws -> Value
}

extension ProtoFieldCodec {
    @inlinable public static var fixedWidth: Int? { nil }

    @inlinable
    public static func merge(from reader: inout ProtoReader, into value: inout Value) throws {
        value = try read(from: &reader)
    }
}

/// A codec whose values can be map keys; `precedes` is the order of deterministic output.
public protocol ProtoMapKeyCodec: ProtoFieldCodec {
    static func precedes(_ lhs: Value, _ rhs: Value) -> Bool
    /// The key as a JSON object member name.
    static func jsonKey(_ value: Value) -> String
    /// The key a JSON member name stands for, or nil when it is not one.
    static func value(fromJSONKey key: String) -> Value?
}

extension ProtoMapKeyCodec where Value: Comparable {
    @inlinable
    public static func precedes(_ lhs: Value, _ rhs: Value) -> Bool { lhs < rhs }
}

// MARK: Varint integers

/// `int32`: a varint; negative values take ten bytes, sign-extended as the spec requires.
public enum ProtoInt32: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: Int32 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int32 {
        Int32(truncatingIfNeeded: try reader.readVarint())
    }
    @inlinable public static func write(_ value: Int32, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(bitPattern: Int64(value)))
    }
    @inlinable public static func size(of value: Int32) -> Int {
        ProtoSize.varint(UInt64(bitPattern: Int64(value)))
    }
}

/// `int64`: a varint of the two's complement bits.
public enum ProtoInt64: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: Int64 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int64 {
        Int64(bitPattern: try reader.readVarint())
    }
    @inlinable public static func write(_ value: Int64, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(bitPattern: value))
    }
    @inlinable public static func size(of value: Int64) -> Int { ProtoSize.varint(UInt64(bitPattern: value)) }
}

/// `uint32`: a varint.
public enum ProtoUInt32: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: UInt32 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> UInt32 {
        UInt32(truncatingIfNeeded: try reader.readVarint())
    }
    @inlinable public static func write(_ value: UInt32, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(value))
    }
    @inlinable public static func size(of value: UInt32) -> Int { ProtoSize.varint(UInt64(value)) }
}

/// `uint64`: a varint.
public enum ProtoUInt64: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: UInt64 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> UInt64 {
        try reader.readVarint()
    }
    @inlinable public static func write(_ value: UInt64, to writer: inout ProtoWriter) {
        writer.writeVarint(value)
    }
    @inlinable public static func size(of value: UInt64) -> Int { ProtoSize.varint(value) }
}

/// `sint32`: a ZigZag-encoded varint, small for small negative numbers.
public enum ProtoSInt32: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: Int32 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int32 {
        let raw = UInt32(truncatingIfNeeded: try reader.readVarint())
        return Int32(bitPattern: raw >> 1) ^ -Int32(bitPattern: raw & 1)
    }
    @inlinable public static func write(_ value: Int32, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(zigZag(value)))
    }
    @inlinable public static func size(of value: Int32) -> Int { ProtoSize.varint(UInt64(zigZag(value))) }
    @inlinable static func zigZag(_ value: Int32) -> UInt32 {
        UInt32(bitPattern: (value << 1) ^ (value >> 31))
    }
}

/// `sint64`: a ZigZag-encoded varint.
public enum ProtoSInt64: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: Int64 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int64 {
        let raw = try reader.readVarint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }
    @inlinable public static func write(_ value: Int64, to writer: inout ProtoWriter) {
        writer.writeVarint(zigZag(value))
    }
    @inlinable public static func size(of value: Int64) -> Int { ProtoSize.varint(zigZag(value)) }
    @inlinable static func zigZag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }
}

/// `bool`: a varint, any non-zero value reads as true.
public enum ProtoBool: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: Bool { false }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Bool {
        try reader.readVarint() != 0
    }
    @inlinable public static func write(_ value: Bool, to writer: inout ProtoWriter) {
        writer.writeVarint(value ? 1 : 0)
    }
    @inlinable public static func size(of value: Bool) -> Int { 1 }
    @inlinable public static func precedes(_ lhs: Bool, _ rhs: Bool) -> Bool { !lhs && rhs }
}

// MARK: Fixed-width numbers

/// `fixed32`: four little-endian bytes.
public enum ProtoFixed32: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .fixed32 }
    @inlinable public static var fixedWidth: Int? { 4 }
    @inlinable public static var defaultValue: UInt32 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> UInt32 { try reader.readFixed32() }
    @inlinable public static func write(_ value: UInt32, to writer: inout ProtoWriter) { writer.writeFixed32(value) }
    @inlinable public static func size(of value: UInt32) -> Int { 4 }
}

/// `fixed64`: eight little-endian bytes.
public enum ProtoFixed64: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .fixed64 }
    @inlinable public static var fixedWidth: Int? { 8 }
    @inlinable public static var defaultValue: UInt64 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> UInt64 { try reader.readFixed64() }
    @inlinable public static func write(_ value: UInt64, to writer: inout ProtoWriter) { writer.writeFixed64(value) }
    @inlinable public static func size(of value: UInt64) -> Int { 8 }
}

/// `sfixed32`: four little-endian bytes of two's complement.
public enum ProtoSFixed32: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .fixed32 }
    @inlinable public static var fixedWidth: Int? { 4 }
    @inlinable public static var defaultValue: Int32 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int32 {
        Int32(bitPattern: try reader.readFixed32())
    }
    @inlinable public static func write(_ value: Int32, to writer: inout ProtoWriter) {
        writer.writeFixed32(UInt32(bitPattern: value))
    }
    @inlinable public static func size(of value: Int32) -> Int { 4 }
}

/// `sfixed64`: eight little-endian bytes of two's complement.
public enum ProtoSFixed64: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .fixed64 }
    @inlinable public static var fixedWidth: Int? { 8 }
    @inlinable public static var defaultValue: Int64 { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int64 {
        Int64(bitPattern: try reader.readFixed64())
    }
    @inlinable public static func write(_ value: Int64, to writer: inout ProtoWriter) {
        writer.writeFixed64(UInt64(bitPattern: value))
    }
    @inlinable public static func size(of value: Int64) -> Int { 8 }
}

/// `float`: IEEE 754 single precision, little-endian.
public enum ProtoFloat: ProtoFieldCodec {
    @inlinable public static var wireType: WireType { .fixed32 }
    @inlinable public static var fixedWidth: Int? { 4 }
    @inlinable public static var defaultValue: Float { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Float {
        Float(bitPattern: try reader.readFixed32())
    }
    @inlinable public static func write(_ value: Float, to writer: inout ProtoWriter) {
        writer.writeFixed32(value.bitPattern)
    }
    @inlinable public static func size(of value: Float) -> Int { 4 }
}

/// `double`: IEEE 754 double precision, little-endian.
public enum ProtoDouble: ProtoFieldCodec {
    @inlinable public static var wireType: WireType { .fixed64 }
    @inlinable public static var fixedWidth: Int? { 8 }
    @inlinable public static var defaultValue: Double { 0 }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Double {
        Double(bitPattern: try reader.readFixed64())
    }
    @inlinable public static func write(_ value: Double, to writer: inout ProtoWriter) {
        writer.writeFixed64(value.bitPattern)
    }
    @inlinable public static func size(of value: Double) -> Int { 8 }
}

// MARK: Length-delimited

/// `string` whose UTF-8 is verified on decode (proto3, editions' `utf8_validation = VERIFY`).
public enum ProtoString: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .lengthDelimited }
    @inlinable public static var defaultValue: String { "" }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> String {
        try reader.readString(validatingUTF8: true)
    }
    @inlinable public static func write(_ value: String, to writer: inout ProtoWriter) { writer.writeString(value) }
    @inlinable public static func size(of value: String) -> Int { ProtoSize.lengthDelimited(value.utf8.count) }
    /// Byte-wise order, as the C++ runtime sorts map keys (Swift's `<` compares canonically).
    @inlinable public static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}

/// `string` read without verification (proto2, `utf8_validation = NONE`); invalid
/// sequences become U+FFFD, since a Swift `String` holds only valid Unicode.
public enum ProtoUnverifiedString: ProtoMapKeyCodec {
    @inlinable public static var wireType: WireType { .lengthDelimited }
    @inlinable public static var defaultValue: String { "" }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> String {
        try reader.readString(validatingUTF8: false)
    }
    @inlinable public static func write(_ value: String, to writer: inout ProtoWriter) { writer.writeString(value) }
    @inlinable public static func size(of value: String) -> Int { ProtoSize.lengthDelimited(value.utf8.count) }
    @inlinable public static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}

/// `bytes`.
public enum ProtoBytes: ProtoFieldCodec {
    @inlinable public static var wireType: WireType { .lengthDelimited }
    @inlinable public static var defaultValue: [UInt8] { [] }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> [UInt8] { try reader.readBytes() }
    @inlinable public static func write(_ value: [UInt8], to writer: inout ProtoWriter) { writer.writeBytes(value) }
    @inlinable public static func size(of value: [UInt8]) -> Int { ProtoSize.lengthDelimited(value.count) }
}

/// A message field, length-delimited; repeated reads of one field merge.
public enum ProtoMessageCodec<M: Message>: ProtoFieldCodec {
    @inlinable public static var wireType: WireType { .lengthDelimited }
    @inlinable public static var defaultValue: M { M() }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> M {
        var message = M()
        try reader.readMessage(into: &message)
        return message
    }
    @inlinable public static func merge(from reader: inout ProtoReader, into value: inout M) throws {
        try reader.readMessage(into: &value)
    }
    @inlinable public static func write(_ value: M, to writer: inout ProtoWriter) { writer.writeMessage(value) }
    @inlinable public static func size(of value: M) -> Int { ProtoSize.lengthDelimited(value.encodedSize()) }
}

// MARK: Enums

/// An open enum: every number reads, unnamed ones as `UNRECOGNIZED(n)`.
public enum ProtoEnumCodec<E: ProtoEnum>: ProtoFieldCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: E { E() }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> E {
        let number = Int(Int32(truncatingIfNeeded: try reader.readVarint()))
        // Open enums name every number (UNRECOGNIZED); closed ones are read elsewhere.
        return E(rawValue: number) ?? E()
    }
    @inlinable public static func write(_ value: E, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(bitPattern: Int64(value.rawValue)))
    }
    @inlinable public static func size(of value: E) -> Int {
        ProtoSize.varint(UInt64(bitPattern: Int64(value.rawValue)))
    }
}

/// A closed enum as a map value: an unknown number throws `UnknownClosedEnumValue`, which
/// `readMapEntry` turns into keeping the whole entry as unknown fields.
public enum ProtoClosedEnumCodec<E: ProtoEnum>: ProtoFieldCodec {
    @inlinable public static var wireType: WireType { .varint }
    @inlinable public static var defaultValue: E { E() }
    @inlinable public static func read(from reader: inout ProtoReader) throws -> E {
        guard let value = E(rawValue: Int(Int32(truncatingIfNeeded: try reader.readVarint()))) else {
            throw UnknownClosedEnumValue()
        }
        return value
    }
    @inlinable public static func write(_ value: E, to writer: inout ProtoWriter) {
        ProtoEnumCodec<E>.write(value, to: &writer)
    }
    @inlinable public static func size(of value: E) -> Int { ProtoEnumCodec<E>.size(of: value) }
    public static func writeJSON(_ value: E, to writer: inout JSONWriter) throws {
        try ProtoEnumCodec<E>.writeJSON(value, to: &writer)
    }
    public static func readJSON(from reader: inout JSONReader) throws -> E {
        try ProtoEnumCodec<E>.readJSON(from: &reader)
    }
}

/// A closed enum read a number it does not name (caught by `readMapEntry`).
public struct UnknownClosedEnumValue: Error {
    @inlinable public init() {}
}

extension ProtoReader {
    /// Reads a closed enum's number; nil (with the field kept in `unknownFields`) when the
    /// enum does not name it, as closed enums require.
    @inlinable
    public mutating func readClosedEnum<E: ProtoEnum>(
        _ type: E.Type, unknownFields: inout UnknownFields
    ) throws -> E? {
        let number = Int32(truncatingIfNeeded: try readVarint())
        if let value = E(rawValue: Int(number)) { return value }
        if !options.discardUnknownFields {
            unknownFields.appendVarint(fieldNumber: fieldNumber, value: UInt64(bitPattern: Int64(number)))
        }
        return nil
    }

    /// Reads a repeated closed enum, packed or not; unnamed numbers go to `unknownFields`.
    @inlinable
    public mutating func readRepeatedClosedEnum<E: ProtoEnum>(
        tag: FieldTag, into values: inout [E], unknownFields: inout UnknownFields
    ) throws {
        guard tag.wireType == .lengthDelimited else {
            if let value = try readClosedEnum(E.self, unknownFields: &unknownFields) { values.append(value) }
            return
        }
        let length = try readLength()
        let outerLimit = limit
        limit = cursor + length
        while cursor < limit {
            if let value = try readClosedEnum(E.self, unknownFields: &unknownFields) { values.append(value) }
        }
        limit = outerLimit
    }
}
