// The text format of each field type: integers and floats as written in C, strings and
// bytes quoted with escapes, enums by name, messages as `{ … }` blocks.

extension ProtoFieldCodec {
    @inlinable public static var isTextMessage: Bool { false }
}

/// Every integer codec (they all conform to `JSONNumberCodec`): decimal out, decimal, hex or
/// octal in.
extension JSONNumberCodec {
    @inlinable public static func writeText(_ value: Value, to writer: inout TextFormatWriter) {
        writer.write(String(value))
    }
    @inlinable public static func readText(from reader: inout TextFormatReader) throws -> Value {
        try reader.readInteger(Value.self)
    }
}

extension ProtoBool {
    public static func writeText(_ value: Bool, to writer: inout TextFormatWriter) { writer.write(value ? "true" : "false") }
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
    public static func writeText(_ value: Float, to writer: inout TextFormatWriter) { writer.write(textFormatNumber(value)) }
    public static func readText(from reader: inout TextFormatReader) throws -> Float { try reader.readFloat() }
}

extension ProtoDouble {
    public static func writeText(_ value: Double, to writer: inout TextFormatWriter) { writer.write(textFormatNumber(value)) }
    public static func readText(from reader: inout TextFormatReader) throws -> Double { try reader.readDouble() }
}

extension ProtoString {
    public static func writeText(_ value: String, to writer: inout TextFormatWriter) { writer.writeQuoted(value.utf8) }
    public static func readText(from reader: inout TextFormatReader) throws -> String {
        try reader.readString(validatingUTF8: true)
    }
}

extension ProtoUnverifiedString {
    public static func writeText(_ value: String, to writer: inout TextFormatWriter) { writer.writeQuoted(value.utf8) }
    public static func readText(from reader: inout TextFormatReader) throws -> String {
        try reader.readString(validatingUTF8: false)
    }
}

extension ProtoBytes {
    public static func writeText(_ value: [UInt8], to writer: inout TextFormatWriter) { writer.writeQuoted(value) }
    public static func readText(from reader: inout TextFormatReader) throws -> [UInt8] { try reader.readBytes() }
}

extension ProtoMessageCodec {
    @inlinable public static var isTextMessage: Bool { true }
    public static func writeText(_ value: M, to writer: inout TextFormatWriter) { writer.writeMessageBody(value) }
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
    public static func readText(from reader: inout TextFormatReader) throws -> E { try reader.readEnum(E.self) }
}

extension ProtoClosedEnumCodec {
    public static func writeText(_ value: E, to writer: inout TextFormatWriter) {
        ProtoEnumCodec<E>.writeText(value, to: &writer)
    }
    public static func readText(from reader: inout TextFormatReader) throws -> E { try reader.readEnum(E.self) }
}
