/// Text format for unverified `string` fields (proto2, `utf8_validation = NONE`): escapes that
/// spell invalid UTF-8 (`"\377"`) are kept as bytes, and printed back the same way, as C++ does
/// (see ``InvalidUTF8Strings``).
extension TextFormatWriter {
    /// Writes element `index` of an unverified string field as the bytes it holds.
    public mutating func writeUnverifiedString(_ name: String, _ value: String, fieldNumber: Int, index: Int = 0, recorded: UnknownFields) {
        guard !recorded.invalidUTF8.isEmpty, let bytes = recorded.invalidUTF8.bytes(of: value, fieldNumber: fieldNumber, index: index)
        else {
            return writeField(name, ProtoUnverifiedString.self, value)
        }
        beginLine()
        write(name)
        write(": ")
        writeQuoted(bytes)
        endLine()
    }

    /// Writes a repeated unverified string field, element by element.
    public mutating func writeRepeatedUnverifiedStrings(_ name: String, _ values: [String], fieldNumber: Int, recorded: UnknownFields) {
        for (index, value) in values.enumerated() {
            writeUnverifiedString(name, value, fieldNumber: fieldNumber, index: index, recorded: recorded)
        }
    }
}

extension TextFormatReader {
    /// Reads `: "…"` into element `index` of an unverified string field; invalid UTF-8 reads as
    /// its repaired form and its bytes are recorded in `unknownFields`.
    public mutating func readUnverifiedString(
        fieldNumber: Int, index: Int = 0, recordingIn unknownFields: inout UnknownFields
    ) throws -> String {
        try separator(optional: false)
        return try readUnverifiedStringValue(fieldNumber: fieldNumber, index: index, recordingIn: &unknownFields)
    }

    /// Reads one element or a list of them into a repeated unverified string field.
    public mutating func readRepeatedUnverifiedStrings(
        into values: inout [String], fieldNumber: Int, recordingIn unknownFields: inout UnknownFields
    ) throws {
        try separator(optional: false)
        try readOneOrList { reader in
            values.append(try reader.readUnverifiedStringValue(fieldNumber: fieldNumber, index: values.count, recordingIn: &unknownFields))
        }
    }

    private mutating func readUnverifiedStringValue(
        fieldNumber: Int, index: Int, recordingIn unknownFields: inout UnknownFields
    ) throws -> String {
        let bytes = try readBytes()
        return bytes.withUnsafeBufferPointer { bytes in
            let string = String(decoding: bytes, as: UTF8.self)
            unknownFields.noteUnverifiedString(string, from: bytes, fieldNumber: fieldNumber, index: index)
            return string
        }
    }
}
