// The proto3 JSON mapping of each field type: 64-bit integers as strings, floats with
// "NaN"/"Infinity", bytes as base64, enums by name, messages as objects.

/// Integers of up to 32 bits: JSON numbers; read from numbers or strings.
public protocol JSONNumberCodec: ProtoMapKeyCodec where Value: FixedWidthInteger {}

extension JSONNumberCodec {
    /// Writes the integer as a decimal JSON number, such as `-42`.
    @inlinable public static func writeJSON(_ value: Value, to writer: inout JSONWriter) throws {
        writer.writeRaw(String(value))
    }
    /// Reads an integer from a JSON number or a quoted one (`1e2` reads as 100, `1.5` throws); out of range throws.
    @inlinable public static func readJSON(from reader: inout JSONReader) throws -> Value {
        try reader.readInteger(Value.self)
    }
    /// The key in decimal, as a JSON object member name: `{"42": …}`.
    @inlinable public static func jsonKey(_ value: Value) -> String { String(value) }
    /// The integer a decimal member name stands for; nil when it is not one or is out of range.
    @inlinable public static func value(fromJSONKey key: String) -> Value? { Value(key) }
}

/// 64-bit integers: JSON strings, since JavaScript numbers hold 53 bits.
public protocol JSONQuotedNumberCodec: JSONNumberCodec {}

extension JSONQuotedNumberCodec {
    /// Writes the integer as a decimal JSON string, such as `"-9007199254740993"`, which JavaScript reads without loss.
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
    /// Writes `true` or `false`.
    public static func writeJSON(_ value: Bool, to writer: inout JSONWriter) throws { writer.writeBool(value) }
    /// Reads the literal `true` or `false`; anything else throws.
    public static func readJSON(from reader: inout JSONReader) throws -> Bool { try reader.readBool() }
    /// `"true"` or `"false"`, the member names of a `map<bool, …>` in JSON.
    public static func jsonKey(_ value: Bool) -> String { value ? "true" : "false" }
    /// The key a member name stands for: `true` for `"true"`, `false` for `"false"`, nil for any other name.
    public static func value(fromJSONKey key: String) -> Bool? {
        switch key {
        case "true": true
        case "false": false
        default: nil
        }
    }
}

extension ProtoFloat {
    /// Writes the shortest number that reads back as the same float; NaN and infinities as `"NaN"`, `"Infinity"`, `"-Infinity"`.
    public static func writeJSON(_ value: Float, to writer: inout JSONWriter) throws { writer.writeFloat(value) }
    /// Reads a number, a quoted number or `"NaN"`, `"Infinity"`, `"-Infinity"`; a finite value beyond `Float`'s range throws.
    public static func readJSON(from reader: inout JSONReader) throws -> Float { try reader.readFloat() }
}

extension ProtoDouble {
    /// Writes the shortest number that reads back exactly; NaN and infinities as `"NaN"`, `"Infinity"`, `"-Infinity"`.
    public static func writeJSON(_ value: Double, to writer: inout JSONWriter) throws { writer.writeDouble(value) }
    /// Reads a number, a quoted number or `"NaN"`, `"Infinity"`, `"-Infinity"`.
    public static func readJSON(from reader: inout JSONReader) throws -> Double { try reader.readDouble() }
}

extension ProtoString {
    /// Writes a JSON string, escaping quotes, backslashes and control characters.
    public static func writeJSON(_ value: String, to writer: inout JSONWriter) throws { writer.writeString(value) }
    /// Reads a JSON string, resolving its escapes; anything other than a string throws.
    public static func readJSON(from reader: inout JSONReader) throws -> String { try reader.readString() }
    /// The key itself as the JSON member name.
    public static func jsonKey(_ value: String) -> String { value }
    /// The member name itself; never nil.
    public static func value(fromJSONKey key: String) -> String? { key }
}

extension ProtoUnverifiedString {
    /// Writes a JSON string, escaping quotes, backslashes and control characters.
    public static func writeJSON(_ value: String, to writer: inout JSONWriter) throws { writer.writeString(value) }
    /// Reads a JSON string, resolving its escapes; JSON text is always valid Unicode, so nothing needs repair.
    public static func readJSON(from reader: inout JSONReader) throws -> String { try reader.readString() }
    /// The key itself as the JSON member name.
    public static func jsonKey(_ value: String) -> String { value }
    /// The member name itself; never nil.
    public static func value(fromJSONKey key: String) -> String? { key }
}

extension ProtoBytes {
    /// Writes the bytes as a JSON string in standard base64, padded with `=`.
    public static func writeJSON(_ value: [UInt8], to writer: inout JSONWriter) throws {
        writer.writeString(Base64.encode(value))
    }
    /// Reads a JSON string of base64, standard or URL-safe, padded or not; other text throws.
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
    /// Writes the message's JSON form: an object of its fields, or a well-known type's special form.
    public static func writeJSON(_ value: M, to writer: inout JSONWriter) throws { try value.encodeJSON(to: &writer) }
    /// Reads a new message from its JSON form.
    public static func readJSON(from reader: inout JSONReader) throws -> M {
        var message = M()
        try message.decodeJSON(from: &reader)
        return message
    }
}

extension ProtoEnumCodec {
    /// Writes the value's name as a JSON string, or its number when it has no name or `alwaysPrintEnumsAsInts` is set;
    /// `google.protobuf.NullValue` is written as `null`.
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
