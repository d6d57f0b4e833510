/// Finding, removing and appending one field number's occurrences in unknown fields: how
/// extension values are read and written.
extension UnknownFields {
    /// Calls `body` with a reader positioned after each tag of `fieldNumber`; `body` reads
    /// the value. Bytes that do not parse end the walk.
    func forEachOccurrence(of fieldNumber: Int, _ body: (FieldTag, inout ProtoReader) throws -> Void) {
        bytes.withUnsafeBytes { buffer in
            var reader = ProtoReader(buffer)
            do {
                while let tag = try reader.nextTag() {
                    if tag.fieldNumber == fieldNumber {
                        try body(tag, &reader)
                    } else {
                        try reader.skipField(tag)
                    }
                }
            } catch {
                return
            }
        }
    }

    func contains(fieldNumber: Int) -> Bool {
        var found = false
        forEachOccurrence(of: fieldNumber) { tag, reader in
            found = true
            try reader.skipField(tag)
        }
        return found
    }

    /// Removes every field with `fieldNumber`, keeping the others in order.
    mutating func removeOccurrences(of fieldNumber: Int) {
        var kept: [UInt8] = []
        var removedAny = false
        bytes.withUnsafeBytes { buffer in
            var reader = ProtoReader(buffer)
            do {
                while let tag = try reader.nextTag() {
                    let start = reader.fieldStart - reader.base
                    try reader.skipField(tag)
                    if tag.fieldNumber == fieldNumber {
                        removedAny = true
                    } else {
                        kept.append(contentsOf: buffer[start..<(reader.cursor - reader.base)])
                    }
                }
            } catch {
                kept.append(contentsOf: buffer[(reader.fieldStart - reader.base)...])
            }
        }
        if removedAny { replaceBytes(kept) }
    }

    /// Appends a field written by `body` into exactly `size` bytes.
    mutating func appendEncoded(size: Int, _ body: (inout ProtoWriter) -> Void) {
        var encoded = [UInt8](repeating: 0, count: size)
        encoded.withUnsafeMutableBytes { buffer in
            var writer = ProtoWriter(filling: buffer)
            body(&writer)
            precondition(writer.bytesFree == 0, "an extension's size and its encoding disagree")
        }
        encoded.withUnsafeBytes { append($0) }
    }
}
