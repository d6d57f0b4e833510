// The text format of each field type: integers and floats as written in C, strings and
// bytes quoted with escapes, enums by name, messages as `{ … }` blocks.

extension ProtoFieldCodec {
    /// False: values other than messages are written `name: value`.
    @inlinable public static var isTextMessage: Bool { false }
}

/// Every integer codec (they all conform to `JSONNumberCodec`): decimal out, decimal, hex or
/// octal in.
extension JSONNumberCodec {
    /// Writes the integer in decimal.
    @inlinable public static func writeText(_ value: Value, to writer: inout TextFormatWriter) {
        writer.write(String(value))
    }
    /// Reads an integer in decimal, hex (`0x1F`) or octal (`017`), `-` for signed types; out of range throws.
    @inlinable public static func readText(from reader: inout TextFormatReader) throws -> Value {
        try reader.readInteger(Value.self)
    }
}

extension ProtoBool {
    /// Writes `true` or `false`.
    public static func writeText(_ value: Bool, to writer: inout TextFormatWriter) { writer.write(value ? "true" : "false") }
    /// Reads `true`, `True`, `t` or `1`, or `false`, `False`, `f` or `0`.
    public static func readText(from reader: inout TextFormatReader) throws -> Bool { try reader.readBool() }
}

/// `inf`, `-inf` and `nan` for the special values; the shortest text that reads back exactly
/// for the others.
@usableFromInline
func textFormatNumber<T: BinaryFloatingPoint & CustomStringConvertible>(_ value: T) -> String {
    if value.isNaN { return "nan" }
    if value.isInfinite { return value < 0 ? "-inf" : "inf" }
    return value.description
}

extension ProtoFloat {
    /// Writes the shortest number that reads back as the same float, or `nan`, `inf`, `-inf`.
    public static func writeText(_ value: Float, to writer: inout TextFormatWriter) { writer.write(textFormatNumber(value)) }
    /// Reads a decimal number (an `f` suffix allowed), `inf`, `infinity` or `nan`, rounded once to `Float`.
    public static func readText(from reader: inout TextFormatReader) throws -> Float { try reader.readFloat() }
}

extension ProtoDouble {
    /// Writes the shortest number that reads back exactly, or `nan`, `inf`, `-inf`.
    public static func writeText(_ value: Double, to writer: inout TextFormatWriter) { writer.write(textFormatNumber(value)) }
    /// Reads a decimal number (an `f` suffix allowed), `inf`, `infinity` or `nan`, in any case.
    public static func readText(from reader: inout TextFormatReader) throws -> Double { try reader.readDouble() }
}

extension ProtoString {
    /// Writes the string quoted, with bytes outside printable ASCII as octal escapes.
    public static func writeText(_ value: String, to writer: inout TextFormatWriter) { writer.writeQuoted(value.utf8) }
    /// Reads one or more adjacent quoted strings; throws `TextFormatDecodingError` when the result is not valid UTF-8.
    public static func readText(from reader: inout TextFormatReader) throws -> String {
        try reader.readString(validatingUTF8: true)
    }
}

extension ProtoUnverifiedString {
    /// Writes the string quoted, with bytes outside printable ASCII as octal escapes.
    public static func writeText(_ value: String, to writer: inout TextFormatWriter) { writer.writeQuoted(value.utf8) }
    /// Reads one or more adjacent quoted strings; bytes that are not valid UTF-8 become U+FFFD.
    public static func readText(from reader: inout TextFormatReader) throws -> String {
        try reader.readString(validatingUTF8: false)
    }
}

extension ProtoBytes {
    /// Writes the bytes quoted, with bytes outside printable ASCII as octal escapes.
    public static func writeText(_ value: [UInt8], to writer: inout TextFormatWriter) { writer.writeQuoted(value) }
    /// Reads one or more adjacent quoted strings, escapes resolved, as bytes.
    public static func readText(from reader: inout TextFormatReader) throws -> [UInt8] { try reader.readBytes() }
}

extension ProtoMessageCodec {
    /// True: a message field is written as `name { … }`.
    @inlinable public static var isTextMessage: Bool { true }
    /// Writes the message's fields (and the unknown fields, if the options say so) inside the braces.
    public static func writeText(_ value: M, to writer: inout TextFormatWriter) { writer.writeMessageBody(value) }
    /// Reads a new message from `{ … }` or `< … >`.
    public static func readText(from reader: inout TextFormatReader) throws -> M {
        var message = M()
        try reader.readMessage(into: &message)
        return message
    }
}

extension ProtoEnumCodec {
    /// The value's name, or its number when this schema does not name it.
    public static func writeText(_ value: E, to writer: inout TextFormatWriter) {
        writer.write(value.protoName ?? String(value.rawValue))
    }
    /// Reads a value's name, or any `int32` number, which an open enum always accepts.
    public static func readText(from reader: inout TextFormatReader) throws -> E { try reader.readEnum(E.self) }
}

extension ProtoClosedEnumCodec {
    /// Writes the value's name, as ``ProtoEnumCodec`` does.
    public static func writeText(_ value: E, to writer: inout TextFormatWriter) {
        ProtoEnumCodec<E>.writeText(value, to: &writer)
    }
    /// Reads a value's name, or a number the enum names; any other number throws.
    public static func readText(from reader: inout TextFormatReader) throws -> E { try reader.readEnum(E.self) }
}
