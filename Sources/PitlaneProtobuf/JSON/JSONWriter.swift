/// Writes the proto3 JSON mapping of messages as UTF-8 bytes.
///
/// Generated `encodeJSONFields(to:)` methods call it member by member; values are written by
/// each field's codec (`ProtoFieldCodec.writeJSON`).
public struct JSONWriter {
    /// How to write: field names, defaults, enums, and the types `Any` may hold.
    public let options: JSONEncodingOptions
    @usableFromInline var bytes: [UInt8] = []
    /// Whether the next member or element needs a comma before it.
    @usableFromInline var needsComma = false
    /// Objects open around the value being written; an `Any` is not expanded beyond
    /// `maxDepth`, since its payload, opaque bytes to the binary decoder, may nest without end.
    @usableFromInline var depth = 0
    static let maxDepth = 100

    /// An empty writer that follows `options`.
    public init(options: JSONEncodingOptions = .init()) {
        self.options = options
        bytes.reserveCapacity(128)
    }

    /// The UTF-8 JSON written so far.
    public var utf8Bytes: [UInt8] { bytes }

    /// Writes `{`; the first member that follows takes no comma.
    public mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        depth += 1
    }

    /// Writes `}`, closing the innermost object.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
        depth -= 1
    }

    /// Writes `[`; call ``separate()`` before each element.
    public mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Writes `]`, closing the innermost array.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes a member name and the colon; the value comes next.
    public mutating func key(_ name: String) {
        separate()
        writeString(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// Writes the comma an array element or object member needs before it.
    public mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    /// Writes text that is already JSON (a number, `true`, `null`).
    public mutating func writeRaw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        needsComma = true
    }

    /// Writes `null`.
    public mutating func writeNull() { writeRaw("null") }

    /// Writes `true` or `false`.
    public mutating func writeBool(_ value: Bool) { writeRaw(value ? "true" : "false") }

    /// Writes a JSON string, escaping what JSON requires.
    public mutating func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Writes a double as JSON: the shortest text that reads back exactly, or one of the
    /// strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    public mutating func writeDouble(_ value: Double) {
        if value.isNaN { return writeString("NaN") }
        if value.isInfinite { return writeString(value < 0 ? "-Infinity" : "Infinity") }
        if value == value.rounded(), abs(value) < 1e17 {
            return writeRaw(value == 0 && value.sign == .minus ? "-0.0" : String(Int64(value)))
        }
        writeRaw(value.description)
    }

    /// Writes a float as JSON, with the shortest text that reads back as the same float.
    public mutating func writeFloat(_ value: Float) {
        if value.isNaN || value.isInfinite { return writeDouble(Double(value)) }
        if value == value.rounded(), abs(value) < 1e7 {
            return writeRaw(value == 0 && value.sign == .minus ? "-0.0" : String(Int64(value)))
        }
        writeRaw(value.description)
    }

    // MARK: Fields

    /// The name a field is written under: its JSON name, or its proto name when asked.
    @inlinable
    public func fieldName(json: String, proto: String) -> String {
        options.preserveProtoFieldNames ? proto : json
    }

    /// Writes one field.
    @inlinable
    public mutating func writeField<C: ProtoFieldCodec>(
        json: String, proto: String, _ codec: C.Type, _ value: C.Value
    ) throws {
        key(fieldName(json: json, proto: proto))
        try C.writeJSON(value, to: &self)
    }

    /// Writes a repeated field as an array; empty ones only when defaults are printed.
    @inlinable
    public mutating func writeRepeatedField<C: ProtoFieldCodec>(
        json: String, proto: String, _ codec: C.Type, _ values: [C.Value]
    ) throws {
        guard !values.isEmpty || options.alwaysPrintFieldsWithoutPresence else { return }
        key(fieldName(json: json, proto: proto))
        beginArray()
        for value in values {
            separate()
            try C.writeJSON(value, to: &self)
        }
        endArray()
    }

    /// Writes a map field as an object with string keys, in key order.
    @inlinable
    public mutating func writeMapField<K: ProtoMapKeyCodec, V: ProtoFieldCodec>(
        json: String, proto: String, _ key: K.Type, _ value: V.Type, _ map: [K.Value: V.Value]
    ) throws {
        guard !map.isEmpty || options.alwaysPrintFieldsWithoutPresence else { return }
        self.key(fieldName(json: json, proto: proto))
        beginObject()
        for (entryKey, entryValue) in map.sorted(by: { K.precedes($0.key, $1.key) }) {
            self.key(K.jsonKey(entryKey))
            try V.writeJSON(entryValue, to: &self)
        }
        endObject()
    }
}
