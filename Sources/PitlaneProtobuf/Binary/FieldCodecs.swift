/// How one protobuf field type reads, writes and measures its values.
///
/// Generated code names a codec per field (`ProtoInt32.self`, `ProtoMessageCodec<Race>.self`)
/// and passes it to the generic helpers on `ProtoReader`, `ProtoWriter` and `ProtoSize`;
/// everything is `@inlinable`, so each use specialises to straight-line code.
public protocol ProtoFieldCodec {
    /// The Swift type a field of this protobuf type holds: `Int32`, `String`, `[UInt8]`, a message or an enum.
    associatedtype Value: Hashable & Sendable
    /// The wire type of one element.
    static var wireType: WireType { get }
    /// The encoded size of every value, for fixed-width types; nil for the others.
    static var fixedWidth: Int? { get }
    /// The value of an absent field, as map entries need it.
    static var defaultValue: Value { get }
    /// Reads one value (its tag already read); throws `ProtobufDecodingError` when the input is malformed.
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
    /// Nil, for codecs whose values vary in size; the fixed-width codecs override it.
    @inlinable public static var fixedWidth: Int? { nil }

    /// Replaces `value` with the one read, so the last occurrence of a scalar field wins.
    @inlinable
    public static func merge(from reader: inout ProtoReader, into value: inout Value) throws {
        value = try read(from: &reader)
    }
}

/// A codec whose values can be map keys; `precedes` is the order of deterministic output.
public protocol ProtoMapKeyCodec: ProtoFieldCodec {
    /// Whether `lhs` sorts before `rhs`, the order of map keys in deterministic binary output and in text format.
    static func precedes(_ lhs: Value, _ rhs: Value) -> Bool
    /// The key as a JSON object member name.
    static func jsonKey(_ value: Value) -> String
    /// The key a JSON member name stands for, or nil when it is not one.
    static func value(fromJSONKey key: String) -> Value?
}

extension ProtoMapKeyCodec where Value: Comparable {
    /// The values' own `<` order.
    @inlinable
    public static func precedes(_ lhs: Value, _ rhs: Value) -> Bool { lhs < rhs }
}

// MARK: Varint integers

/// `int32`: a varint; negative values take ten bytes, sign-extended as the spec requires.
public enum ProtoInt32: ProtoMapKeyCodec {
    /// `int32` values travel as varints (wire type 0).
    @inlinable public static var wireType: WireType { .varint }
    /// Zero, the value of an absent `int32` field.
    @inlinable public static var defaultValue: Int32 { 0 }
    /// Reads a varint and keeps its low 32 bits, as the spec says for `int32`.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int32 {
        Int32(truncatingIfNeeded: try reader.readVarint())
    }
    /// Writes the value sign-extended to 64 bits as a varint, so a negative value takes ten bytes.
    @inlinable public static func write(_ value: Int32, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(bitPattern: Int64(value)))
    }
    /// The varint's size: 1 to 5 bytes for a non-negative value, 10 for a negative one.
    @inlinable public static func size(of value: Int32) -> Int {
        ProtoSize.varint(UInt64(bitPattern: Int64(value)))
    }
}

/// `int64`: a varint of the two's complement bits.
public enum ProtoInt64: ProtoMapKeyCodec {
    /// `int64` values travel as varints (wire type 0).
    @inlinable public static var wireType: WireType { .varint }
    /// Zero, the value of an absent `int64` field.
    @inlinable public static var defaultValue: Int64 { 0 }
    /// Reads a varint as the 64 bits of a two's complement value.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int64 {
        Int64(bitPattern: try reader.readVarint())
    }
    /// Writes the value's two's complement bits as a varint, so a negative value takes ten bytes.
    @inlinable public static func write(_ value: Int64, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(bitPattern: value))
    }
    /// The varint's size: 1 to 10 bytes, 10 for any negative value.
    @inlinable public static func size(of value: Int64) -> Int { ProtoSize.varint(UInt64(bitPattern: value)) }
}

/// `uint32`: a varint.
public enum ProtoUInt32: ProtoMapKeyCodec {
    /// `uint32` values travel as varints (wire type 0).
    @inlinable public static var wireType: WireType { .varint }
    /// Zero, the value of an absent `uint32` field.
    @inlinable public static var defaultValue: UInt32 { 0 }
    /// Reads a varint and keeps its low 32 bits.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> UInt32 {
        UInt32(truncatingIfNeeded: try reader.readVarint())
    }
    /// Writes the value as a varint of 1 to 5 bytes.
    @inlinable public static func write(_ value: UInt32, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(value))
    }
    /// The varint's size: 1 to 5 bytes.
    @inlinable public static func size(of value: UInt32) -> Int { ProtoSize.varint(UInt64(value)) }
}

/// `uint64`: a varint.
public enum ProtoUInt64: ProtoMapKeyCodec {
    /// `uint64` values travel as varints (wire type 0).
    @inlinable public static var wireType: WireType { .varint }
    /// Zero, the value of an absent `uint64` field.
    @inlinable public static var defaultValue: UInt64 { 0 }
    /// Reads a varint.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> UInt64 {
        try reader.readVarint()
    }
    /// Writes the value as a varint of 1 to 10 bytes.
    @inlinable public static func write(_ value: UInt64, to writer: inout ProtoWriter) {
        writer.writeVarint(value)
    }
    /// The varint's size: 1 to 10 bytes.
    @inlinable public static func size(of value: UInt64) -> Int { ProtoSize.varint(value) }
}

/// `sint32`: a ZigZag-encoded varint, small for small negative numbers.
public enum ProtoSInt32: ProtoMapKeyCodec {
    /// `sint32` values travel as ZigZag-encoded varints (wire type 0).
    @inlinable public static var wireType: WireType { .varint }
    /// Zero, the value of an absent `sint32` field.
    @inlinable public static var defaultValue: Int32 { 0 }
    /// Reads a `sint32` field's value: a ZigZag-encoded varint (0, 1, 2, 3 stand for 0, -1, 1, -2), low 32 bits kept.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int32 {
        let raw = UInt32(truncatingIfNeeded: try reader.readVarint())
        return Int32(bitPattern: raw >> 1) ^ -Int32(bitPattern: raw & 1)
    }
    /// Writes the value ZigZag-encoded (`(n << 1) ^ (n >> 31)`) as a varint.
    @inlinable public static func write(_ value: Int32, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(zigZag(value)))
    }
    /// The size of the ZigZag-encoded varint: 1 to 5 bytes.
    @inlinable public static func size(of value: Int32) -> Int { ProtoSize.varint(UInt64(zigZag(value))) }
    @inlinable static func zigZag(_ value: Int32) -> UInt32 {
        UInt32(bitPattern: (value << 1) ^ (value >> 31))
    }
}

/// `sint64`: a ZigZag-encoded varint.
public enum ProtoSInt64: ProtoMapKeyCodec {
    /// `sint64` values travel as ZigZag-encoded varints (wire type 0).
    @inlinable public static var wireType: WireType { .varint }
    /// Zero, the value of an absent `sint64` field.
    @inlinable public static var defaultValue: Int64 { 0 }
    /// Reads a `sint64` field's value: a ZigZag-encoded varint (0, 1, 2, 3 stand for 0, -1, 1, -2).
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int64 {
        let raw = try reader.readVarint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }
    /// Writes the value ZigZag-encoded (`(n << 1) ^ (n >> 63)`) as a varint.
    @inlinable public static func write(_ value: Int64, to writer: inout ProtoWriter) {
        writer.writeVarint(zigZag(value))
    }
    /// The size of the ZigZag-encoded varint: 1 to 10 bytes.
    @inlinable public static func size(of value: Int64) -> Int { ProtoSize.varint(zigZag(value)) }
    @inlinable static func zigZag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }
}

/// `bool`: a varint, any non-zero value reads as true.
public enum ProtoBool: ProtoMapKeyCodec {
    /// `bool` values travel as varints (wire type 0).
    @inlinable public static var wireType: WireType { .varint }
    /// False, the value of an absent `bool` field.
    @inlinable public static var defaultValue: Bool { false }
    /// Reads a varint; any non-zero value is true.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Bool {
        try reader.readVarint() != 0
    }
    /// Writes 1 or 0 as a one-byte varint.
    @inlinable public static func write(_ value: Bool, to writer: inout ProtoWriter) {
        writer.writeVarint(value ? 1 : 0)
    }
    /// Always 1 byte.
    @inlinable public static func size(of value: Bool) -> Int { 1 }
    /// `false` sorts before `true`.
    @inlinable public static func precedes(_ lhs: Bool, _ rhs: Bool) -> Bool { !lhs && rhs }
}

// MARK: Fixed-width numbers

/// `fixed32`: four little-endian bytes.
public enum ProtoFixed32: ProtoMapKeyCodec {
    /// `fixed32` values travel as four bytes (wire type 5).
    @inlinable public static var wireType: WireType { .fixed32 }
    /// Every value takes four bytes.
    @inlinable public static var fixedWidth: Int? { 4 }
    /// Zero, the value of an absent `fixed32` field.
    @inlinable public static var defaultValue: UInt32 { 0 }
    /// Reads four little-endian bytes.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> UInt32 { try reader.readFixed32() }
    /// Writes the value as four little-endian bytes.
    @inlinable public static func write(_ value: UInt32, to writer: inout ProtoWriter) { writer.writeFixed32(value) }
    /// Always four bytes.
    @inlinable public static func size(of value: UInt32) -> Int { 4 }
}

/// `fixed64`: eight little-endian bytes.
public enum ProtoFixed64: ProtoMapKeyCodec {
    /// `fixed64` values travel as eight bytes (wire type 1).
    @inlinable public static var wireType: WireType { .fixed64 }
    /// Every value takes eight bytes.
    @inlinable public static var fixedWidth: Int? { 8 }
    /// Zero, the value of an absent `fixed64` field.
    @inlinable public static var defaultValue: UInt64 { 0 }
    /// Reads eight little-endian bytes.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> UInt64 { try reader.readFixed64() }
    /// Writes the value as eight little-endian bytes.
    @inlinable public static func write(_ value: UInt64, to writer: inout ProtoWriter) { writer.writeFixed64(value) }
    /// Always eight bytes.
    @inlinable public static func size(of value: UInt64) -> Int { 8 }
}

/// `sfixed32`: four little-endian bytes of two's complement.
public enum ProtoSFixed32: ProtoMapKeyCodec {
    /// `sfixed32` values travel as four bytes (wire type 5).
    @inlinable public static var wireType: WireType { .fixed32 }
    /// Every value takes four bytes.
    @inlinable public static var fixedWidth: Int? { 4 }
    /// Zero, the value of an absent `sfixed32` field.
    @inlinable public static var defaultValue: Int32 { 0 }
    /// Reads four little-endian bytes as a two's complement value.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int32 {
        Int32(bitPattern: try reader.readFixed32())
    }
    /// Writes the value's two's complement bits as four little-endian bytes.
    @inlinable public static func write(_ value: Int32, to writer: inout ProtoWriter) {
        writer.writeFixed32(UInt32(bitPattern: value))
    }
    /// Always four bytes.
    @inlinable public static func size(of value: Int32) -> Int { 4 }
}

/// `sfixed64`: eight little-endian bytes of two's complement.
public enum ProtoSFixed64: ProtoMapKeyCodec {
    /// `sfixed64` values travel as eight bytes (wire type 1).
    @inlinable public static var wireType: WireType { .fixed64 }
    /// Every value takes eight bytes.
    @inlinable public static var fixedWidth: Int? { 8 }
    /// Zero, the value of an absent `sfixed64` field.
    @inlinable public static var defaultValue: Int64 { 0 }
    /// Reads eight little-endian bytes as a two's complement value.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Int64 {
        Int64(bitPattern: try reader.readFixed64())
    }
    /// Writes the value's two's complement bits as eight little-endian bytes.
    @inlinable public static func write(_ value: Int64, to writer: inout ProtoWriter) {
        writer.writeFixed64(UInt64(bitPattern: value))
    }
    /// Always eight bytes.
    @inlinable public static func size(of value: Int64) -> Int { 8 }
}

/// `float`: IEEE 754 single precision, little-endian.
public enum ProtoFloat: ProtoFieldCodec {
    /// `float` values travel as four bytes (wire type 5).
    @inlinable public static var wireType: WireType { .fixed32 }
    /// Every value takes four bytes.
    @inlinable public static var fixedWidth: Int? { 4 }
    /// Zero, the value of an absent `float` field.
    @inlinable public static var defaultValue: Float { 0 }
    /// Reads four little-endian bytes as an IEEE 754 single-precision value.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Float {
        Float(bitPattern: try reader.readFixed32())
    }
    /// Writes the value's IEEE 754 bits as four little-endian bytes.
    @inlinable public static func write(_ value: Float, to writer: inout ProtoWriter) {
        writer.writeFixed32(value.bitPattern)
    }
    /// Always four bytes.
    @inlinable public static func size(of value: Float) -> Int { 4 }
}

/// `double`: IEEE 754 double precision, little-endian.
public enum ProtoDouble: ProtoFieldCodec {
    /// `double` values travel as eight bytes (wire type 1).
    @inlinable public static var wireType: WireType { .fixed64 }
    /// Every value takes eight bytes.
    @inlinable public static var fixedWidth: Int? { 8 }
    /// Zero, the value of an absent `double` field.
    @inlinable public static var defaultValue: Double { 0 }
    /// Reads eight little-endian bytes as an IEEE 754 double-precision value.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> Double {
        Double(bitPattern: try reader.readFixed64())
    }
    /// Writes the value's IEEE 754 bits as eight little-endian bytes.
    @inlinable public static func write(_ value: Double, to writer: inout ProtoWriter) {
        writer.writeFixed64(value.bitPattern)
    }
    /// Always eight bytes.
    @inlinable public static func size(of value: Double) -> Int { 8 }
}

// MARK: Length-delimited

/// `string` whose UTF-8 is verified on decode (proto3, editions' `utf8_validation = VERIFY`).
public enum ProtoString: ProtoMapKeyCodec {
    /// Length-delimited (wire type 2): a varint length, then the UTF-8 bytes.
    @inlinable public static var wireType: WireType { .lengthDelimited }
    /// The empty string, the value of an absent `string` field.
    @inlinable public static var defaultValue: String { "" }
    /// Reads a string; throws `ProtobufDecodingError` with code `invalidUTF8` when its bytes are not valid UTF-8.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> String {
        try reader.readString(validatingUTF8: true)
    }
    /// Writes the string's UTF-8 bytes and their length prefix (without a tag), backwards.
    @inlinable public static func write(_ value: String, to writer: inout ProtoWriter) { writer.writeString(value) }
    /// The encoded size: the length prefix and the UTF-8 bytes.
    @inlinable public static func size(of value: String) -> Int { ProtoSize.lengthDelimited(value.utf8.count) }
    /// Byte-wise order, as the C++ runtime sorts map keys (Swift's `<` compares canonically).
    @inlinable public static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}

/// `string` read without verification (proto2, `utf8_validation = NONE`); invalid
/// sequences become U+FFFD, since a Swift `String` holds only valid Unicode.
public enum ProtoUnverifiedString: ProtoMapKeyCodec {
    /// Length-delimited (wire type 2): a varint length, then the bytes.
    @inlinable public static var wireType: WireType { .lengthDelimited }
    /// The empty string, the value of an absent `string` field.
    @inlinable public static var defaultValue: String { "" }
    /// Reads a string without failing: bytes that are not valid UTF-8 become U+FFFD.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> String {
        try reader.readString(validatingUTF8: false)
    }
    /// Writes the string's UTF-8 bytes and their length prefix (without a tag), backwards.
    @inlinable public static func write(_ value: String, to writer: inout ProtoWriter) { writer.writeString(value) }
    /// The encoded size: the length prefix and the UTF-8 bytes.
    @inlinable public static func size(of value: String) -> Int { ProtoSize.lengthDelimited(value.utf8.count) }
    /// Byte-wise order of the UTF-8, as the C++ runtime sorts map keys (Swift's `<` compares canonically).
    @inlinable public static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}

/// `bytes`.
public enum ProtoBytes: ProtoFieldCodec {
    /// Length-delimited (wire type 2): a varint length, then the bytes.
    @inlinable public static var wireType: WireType { .lengthDelimited }
    /// No bytes, the value of an absent `bytes` field.
    @inlinable public static var defaultValue: [UInt8] { [] }
    /// Reads the field's bytes into a new array.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> [UInt8] { try reader.readBytes() }
    /// Writes the bytes and their length prefix (without a tag), backwards.
    @inlinable public static func write(_ value: [UInt8], to writer: inout ProtoWriter) { writer.writeBytes(value) }
    /// The encoded size: the length prefix and the bytes.
    @inlinable public static func size(of value: [UInt8]) -> Int { ProtoSize.lengthDelimited(value.count) }
}

/// A message field, length-delimited; repeated reads of one field merge.
public enum ProtoMessageCodec<M: Message>: ProtoFieldCodec {
    /// Length-delimited (wire type 2): a varint length, then the message's fields.
    @inlinable public static var wireType: WireType { .lengthDelimited }
    /// An empty message, every field at its default.
    @inlinable public static var defaultValue: M { M() }
    /// Reads a length-delimited message into a new instance.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> M {
        var message = M()
        try reader.readMessage(into: &message)
        return message
    }
    /// Merges a length-delimited message into `value`, as a message field that occurs twice requires.
    @inlinable public static func merge(from reader: inout ProtoReader, into value: inout M) throws {
        try reader.readMessage(into: &value)
    }
    /// Writes the message's fields and their length prefix (without a tag), backwards.
    @inlinable public static func write(_ value: M, to writer: inout ProtoWriter) { writer.writeMessage(value) }
    /// The encoded size: the length prefix and the message's `encodedSize()`.
    @inlinable public static func size(of value: M) -> Int { ProtoSize.lengthDelimited(value.encodedSize()) }
}

// MARK: Enums

/// An open enum: every number reads, unnamed ones as `UNRECOGNIZED(n)`.
public enum ProtoEnumCodec<E: ProtoEnum>: ProtoFieldCodec {
    /// Enum numbers travel as varints (wire type 0), like `int32`.
    @inlinable public static var wireType: WireType { .varint }
    /// The enum's first declared value, `E()`, which an absent field reads as.
    @inlinable public static var defaultValue: E { E() }
    /// Reads an `int32` varint as the enum value; an open enum names every number, so none is lost.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> E {
        let number = Int(Int32(truncatingIfNeeded: try reader.readVarint()))
        // Open enums name every number (UNRECOGNIZED); closed ones are read elsewhere.
        return E(rawValue: number) ?? E()
    }
    /// Writes the enum's number sign-extended as a varint, as for `int32`: a negative number takes ten bytes.
    @inlinable public static func write(_ value: E, to writer: inout ProtoWriter) {
        writer.writeVarint(UInt64(bitPattern: Int64(value.rawValue)))
    }
    /// The varint's size, as for `int32`: 10 bytes for a negative number.
    @inlinable public static func size(of value: E) -> Int {
        ProtoSize.varint(UInt64(bitPattern: Int64(value.rawValue)))
    }
}

/// A closed enum as a map value: an unknown number throws `UnknownClosedEnumValue`, which
/// `readMapEntry` turns into keeping the whole entry as unknown fields.
public enum ProtoClosedEnumCodec<E: ProtoEnum>: ProtoFieldCodec {
    /// Enum numbers travel as varints (wire type 0), like `int32`.
    @inlinable public static var wireType: WireType { .varint }
    /// The enum's first declared value, `E()`, which an absent field reads as.
    @inlinable public static var defaultValue: E { E() }
    /// Reads an `int32` varint; throws `UnknownClosedEnumValue` when the enum does not name the number.
    @inlinable public static func read(from reader: inout ProtoReader) throws -> E {
        guard let value = E(rawValue: Int(Int32(truncatingIfNeeded: try reader.readVarint()))) else {
            throw UnknownClosedEnumValue()
        }
        return value
    }
    /// Writes the enum's number as ``ProtoEnumCodec`` does.
    @inlinable public static func write(_ value: E, to writer: inout ProtoWriter) {
        ProtoEnumCodec<E>.write(value, to: &writer)
    }
    /// The varint's size, as ``ProtoEnumCodec`` measures it.
    @inlinable public static func size(of value: E) -> Int { ProtoEnumCodec<E>.size(of: value) }
    /// Writes the value as ``ProtoEnumCodec`` does: its name, or its number when it has none or `alwaysPrintEnumsAsInts` is set.
    public static func writeJSON(_ value: E, to writer: inout JSONWriter) throws {
        try ProtoEnumCodec<E>.writeJSON(value, to: &writer)
    }
    /// Reads a name or a number as ``ProtoEnumCodec`` does; a closed enum accepts only numbers it names.
    public static func readJSON(from reader: inout JSONReader) throws -> E {
        try ProtoEnumCodec<E>.readJSON(from: &reader)
    }
}

/// A closed enum read a number it does not name (caught by `readMapEntry`).
public struct UnknownClosedEnumValue: Error {
    /// Creates the error; it carries no detail, since the code that catches it knows the field being read.
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
