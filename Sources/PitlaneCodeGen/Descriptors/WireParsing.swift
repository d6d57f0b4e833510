import PitlaneProtobuf

/// Reads a message's fields one by one without a generated type: the generator reads
/// descriptors this way, so it needs no generated code of its own to start.
func forEachField(
    in buffer: UnsafeRawBufferPointer, _ body: (FieldTag, inout ProtoReader) throws -> Bool
) throws {
    var reader = ProtoReader(buffer)
    while let tag = try reader.nextTag() {
        if try !body(tag, &reader) {
            try reader.skipField(tag)
        }
    }
}

extension ProtoReader {
    mutating func string() throws -> String { try readString(validatingUTF8: false) }
    mutating func int32() throws -> Int32 { Int32(truncatingIfNeeded: try readVarint()) }
    mutating func bool() throws -> Bool { try readVarint() != 0 }

    /// Parses the length-delimited field just tagged as a nested message.
    mutating func message<T: WireParsable>(_ type: T.Type) throws -> T {
        try T(parsing: readLengthDelimited())
    }
}

/// A descriptor type that reads itself from wire format.
protocol WireParsable {
    init(parsing buffer: UnsafeRawBufferPointer) throws
}
