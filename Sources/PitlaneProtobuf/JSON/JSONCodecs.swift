// The proto3 JSON mapping of each field type: 64-bit integers as strings, floats with
// "NaN"/"Infinity", bytes as base64, enums by name, messages as objects.

/// Integers of up to 32 bits: JSON numbers; read from numbers or strings.
public protocol JSONNumberCodec: ProtoMapKeyCodec where Value: FixedWidthInteger {}

extension JSONNumberCodec {
    @inlinable public static func writeJSON(_ value: Value, to writer: inout JSONWriter) throws {
        writer.writeRaw(String(value))
    }
    @inlinable public static func readJSON(from reader: inout JSONReader) throws -> Value {
        try reader.readInteger(Value.self)
    }
    @inlinable public static func jsonKey(_ value: Value) -> String { String(value) }
    @inlinable public static func value(fromJSONKey key: String) -> Value? { Value(key) }
}

/// 64-bit integers: JSON strings, since JavaScript numbers hold 53 bits.
public protocol JSONQuotedNumberCodec: JSONNumberCodec {}

extension JSONQuotedNumberCodec {
    @inlinable public static func writeJSON(_ value: Value, to writer: inout JSONWriter) throws {
        writer.writeString(String(value))
    }
}

extension ProtoInt32: JSONNumberCodec {}
extension ProtoUInt32: JSONNumberCodec {}
extension ProtoSInt32: JSONNumberCodec {}
extension ProtoFixed32: JSONNumberCodec {}
extension ProtoSFixed32: JSONNumberCodec {}
extension ProtoInt64: JSONQuotedNumberCodec {}
extension ProtoUInt64: JSONQuotedNumberCodec {}
extension ProtoSInt64: JSONQuotedNumberCodec {}
extension ProtoFixed64: JSONQuotedNumberCodec {}
extension ProtoSFixed64: JSONQuotedNumberCodec {}

extension ProtoBool {
    public static func writeJSON(_ value: Bool, to writer: inout JSONWriter) throws { writer.writeBool(value) }
    public static func readJSON(from reader: inout JSONReader) throws -> Bool { try reader.readBool() }
    public static func jsonKey(_ value: Bool) -> String { value ? "true" : "false" }
    public static func value(fromJSONKey key: String) -> Bool? {
        switch key {
        case "true": true
        case "false": false
        default: nil
        }
    }
}

extension ProtoFloat {
    public static func writeJSON(_ value: Float, to writer: inout JSONWriter) throws { writer.writeFloat(value) }
    public static func readJSON(from reader: inout JSONReader) throws -> Float { try reader.readFloat() }
}

extension ProtoDouble {
    public static func writeJSON(_ value: Double, to writer: inout JSONWriter) throws { writer.writeDouble(value) }
    public static func readJSON(from reader: inout JSONReader) throws -> Double { try reader.readDouble() }
}

extension ProtoString {
    public static func writeJSON(_ value: String, to writer: inout JSONWriter) throws { writer.writeString(value) }
    public static func readJSON(from reader: inout JSONReader) throws -> String { try reader.readString() }
    public static func jsonKey(_ value: String) -> String { value }
    public static func value(fromJSONKey key: String) -> String? { key }
}

extension ProtoUnverifiedString {
    public static func writeJSON(_ value: String, to writer: inout JSONWriter) throws { writer.writeString(value) }
    public static func readJSON(from reader: inout JSONReader) throws -> String { try reader.readString() }
    public static func jsonKey(_ value: String) -> String { value }
    public static func value(fromJSONKey key: String) -> String? { key }
}

extension ProtoBytes {
    public static func writeJSON(_ value: [UInt8], to writer: inout JSONWriter) throws {
        writer.writeString(Base64.encode(value))
    }
    public static func readJSON(from reader: inout JSONReader) throws -> [UInt8] {
        let start = reader.index
        guard let bytes = Base64.decode(try reader.readString()) else {
            reader.index = start
            throw reader.error("bytes field is not valid base64")
        }
        return bytes
    }
}

extension ProtoMessageCodec {
    public static func writeJSON(_ value: M, to writer: inout JSONWriter) throws { try value.encodeJSON(to: &writer) }
    public static func readJSON(from reader: inout JSONReader) throws -> M {
        var message = M()
        try message.decodeJSON(from: &reader)
        return message
    }
}

extension ProtoEnumCodec {
    public static func writeJSON(_ value: E, to writer: inout JSONWriter) throws {
        if E.self == Google_Protobuf_NullValue.self { return writer.writeNull() }
        if !writer.options.alwaysPrintEnumsAsInts, let name = value.protoName {
            writer.writeString(name)
        } else {
            writer.writeRaw(String(value.rawValue))
        }
    }

    /// Reads a name or a number. An unknown name throws; callers that ignore unknown
    /// fields treat it as absent (see `readEnumJSON`).
    public static func readJSON(from reader: inout JSONReader) throws -> E {
        guard let value = try readEnumJSON(from: &reader) else {
            throw reader.error("unknown value for enum \(E.self)")
        }
        return value
    }

    /// Reads a name or a number; nil for a name (or, for a closed enum, a number) the enum
    /// does not have and unknown fields are being ignored.
    public static func readEnumJSON(from reader: inout JSONReader) throws -> E? {
        let start = reader.index
        if E.self == Google_Protobuf_NullValue.self, try reader.consumeNull() { return E() }
        if try reader.peek() == UInt8(ascii: "\"") {
            let name = try reader.readString()
            if let value = E(protoName: name) { return value }
            if reader.options.ignoreUnknownFields { return nil }
            reader.index = start
            throw reader.error("\"\(name)\" is not a value of enum \(E.self)")
        }
        let number = try reader.readInteger(Int32.self)
        if let value = E(rawValue: Int(number)) { return value }
        if reader.options.ignoreUnknownFields { return nil }
        reader.index = start
        throw reader.error("\(number) is not a value of closed enum \(E.self)")
    }
}
