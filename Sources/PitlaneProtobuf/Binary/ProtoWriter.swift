/// Writes protobuf wire format into a buffer of known size, from its end to its start.
///
/// Writing backwards means a nested message's length is known once its fields are written,
/// so one size pass (`encodedSize()`) and one write pass encode any message; nothing is
/// measured twice. Generated `encodeFields(to:)` methods therefore write fields last to
/// first, and a field's value before its tag.
public struct ProtoWriter {
    @usableFromInline let start: UnsafeMutableRawPointer
    @usableFromInline var cursor: UnsafeMutableRawPointer
    @usableFromInline let end: UnsafeMutableRawPointer
    /// Write map entries in key order, so equal messages encode to equal bytes.
    public let deterministic: Bool

    /// A writer that fills `buffer` from its end.
    public init(filling buffer: UnsafeMutableRawBufferPointer, deterministic: Bool = false) {
        let base = buffer.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 1)!
        start = base
        end = base + buffer.count
        cursor = end
        self.deterministic = deterministic
    }

    /// Bytes written so far; a mark for measuring what a nested write added.
    @inlinable
    public var bytesWritten: Int { end - cursor }

    /// Bytes still free at the front of the buffer.
    @inlinable
    public var bytesFree: Int { cursor - start }

    /// Moves the cursor back by `count` bytes and returns where to write them.
    @inlinable @inline(__always)
    mutating func claim(_ count: Int) -> UnsafeMutableRawPointer {
        // The buffer is sized by encodedSize(); running out means the two passes disagree,
        // a bug that must not turn into a write before the buffer.
        precondition(count <= cursor - start, "ProtoWriter: encodedSize() was smaller than what was written")
        cursor -= count
        return cursor
    }

    /// Writes `value` as a varint: 7 bits a byte, least significant first, the high bit set on all but the last.
    @inlinable @inline(__always)
    public mutating func writeVarint(_ value: UInt64) {
        if value < 0x80 {
            claim(1).storeBytes(of: UInt8(value), as: UInt8.self)
        } else {
            writeLongVarint(value)
        }
    }

    @usableFromInline
    mutating func writeLongVarint(_ value: UInt64) {
        let count = ProtoSize.varint(value)
        var pointer = claim(count)
        var rest = value
        while rest >= 0x80 {
            pointer.storeBytes(of: UInt8(truncatingIfNeeded: rest) | 0x80, as: UInt8.self)
            pointer += 1
            rest >>= 7
        }
        pointer.storeBytes(of: UInt8(rest), as: UInt8.self)
    }

    /// Writes a field tag (`fieldNumber << 3 | wireType`, see ``FieldTag/rawValue``) as a varint.
    @inlinable
    public mutating func writeTag(_ tag: UInt32) {
        writeVarint(UInt64(tag))
    }

    /// Writes `value` as four little-endian bytes (`fixed32`, `sfixed32` and `float` bits).
    @inlinable
    public mutating func writeFixed32(_ value: UInt32) {
        claim(4).storeBytes(of: value.littleEndian, as: UInt32.self)
    }

    /// Writes `value` as eight little-endian bytes (`fixed64`, `sfixed64` and `double` bits).
    @inlinable
    public mutating func writeFixed64(_ value: UInt64) {
        claim(8).storeBytes(of: value.littleEndian, as: UInt64.self)
    }

    /// Writes `bytes` as they are, with no length prefix.
    @inlinable
    public mutating func writeRawBytes(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        claim(bytes.count).copyMemory(from: source, byteCount: bytes.count)
    }

    /// Writes a string's UTF-8 bytes and their length prefix.
    @inlinable @inline(__always)
    public mutating func writeString(_ value: String) {
        let count =
            value.utf8.withContiguousStorageIfAvailable { bytes in
                writeRawBytes(UnsafeRawBufferPointer(bytes))
                return bytes.count
            } ?? writeNonContiguousUTF8(value)
        writeVarint(UInt64(count))
    }

    /// `writeString` for a string without contiguous UTF-8: a bridged `NSString` on Apple
    /// platforms. On Linux every `String` (native, small or shared) has contiguous UTF-8, and
    /// this path must stay free of copies and releases: a call the optimizer sees might
    /// release would make it copy every message it encodes out of a repeated field, in case
    /// the release ran a deinit that changed it (a retain and release per reference field).
    @inlinable @inline(never)
    mutating func writeNonContiguousUTF8(_ value: String) -> Int {
        #if canImport(Darwin)
        var copy = value
        return copy.withUTF8 { bytes in
            writeRawBytes(UnsafeRawBufferPointer(bytes))
            return bytes.count
        }
        #else
        preconditionFailure("a String on Linux always has contiguous UTF-8")
        #endif
    }

    /// Writes bytes and their length prefix.
    @inlinable
    public mutating func writeBytes(_ value: [UInt8]) {
        value.withUnsafeBytes { writeRawBytes($0) }
        writeVarint(UInt64(value.count))
    }

    // MARK: Fields

    /// Writes a field: its value, then its tag (the writer runs backwards).
    @inlinable
    public mutating func writeField<C: ProtoFieldCodec>(_ codec: C.Type, _ value: C.Value, tag: UInt32) {
        C.write(value, to: &self)
        writeTag(tag)
    }

    /// Writes each element as its own field (`EXPANDED` encoding, and strings, bytes, messages).
    @inlinable
    public mutating func writeRepeated<C: ProtoFieldCodec>(_ codec: C.Type, _ values: [C.Value], tag: UInt32) {
        // Elements borrowed from the array's buffer: `values[index]` copies a message element
        // (a retain of each of its strings, arrays and maps, and a release after).
        values.withUnsafeBufferPointer { elements in
            var index = elements.count
            while index > 0 {
                index -= 1
                C.write(elements[index], to: &self)
                writeTag(tag)
            }
        }
    }

    /// Writes the elements as one length-delimited run (`PACKED` encoding); nothing when empty.
    @inlinable
    public mutating func writePacked<C: ProtoFieldCodec>(_ codec: C.Type, _ values: [C.Value], tag: UInt32) {
        guard !values.isEmpty else { return }
        let mark = bytesWritten
        values.withUnsafeBufferPointer { elements in
            var index = elements.count
            while index > 0 {
                index -= 1
                C.write(elements[index], to: &self)
            }
        }
        writeVarint(UInt64(bytesWritten - mark))
        writeTag(tag)
    }

    /// Writes a message's fields and their length prefix.
    @inlinable
    public mutating func writeMessage<M: Message>(_ message: M) {
        let mark = bytesWritten
        message.encodeFields(to: &self)
        writeVarint(UInt64(bytesWritten - mark))
    }

    /// Writes a group: START_GROUP tag, fields, END_GROUP tag.
    @inlinable
    public mutating func writeGroup<M: Message>(_ message: M, fieldNumber: Int) {
        writeTag(FieldTag(fieldNumber: fieldNumber, wireType: .endGroup).rawValue)
        message.encodeFields(to: &self)
        writeTag(FieldTag(fieldNumber: fieldNumber, wireType: .startGroup).rawValue)
    }

    /// Writes a map as a repeated entry message with the key as field 1 and the value as
    /// field 2, both always present (as the C++ runtime writes them). Keys are sorted when
    /// the writer is deterministic.
    @inlinable
    public mutating func writeMap<K: ProtoMapKeyCodec, V: ProtoFieldCodec>(
        _ key: K.Type, _ value: V.Type, _ map: [K.Value: V.Value], tag: UInt32
    ) {
        if deterministic {
            for (entryKey, entryValue) in map.sorted(by: { K.precedes($0.key, $1.key) }).reversed() {
                writeMapEntry(K.self, V.self, entryKey, entryValue, tag: tag)
            }
        } else {
            for (entryKey, entryValue) in map {
                writeMapEntry(K.self, V.self, entryKey, entryValue, tag: tag)
            }
        }
    }

    @inlinable
    mutating func writeMapEntry<K: ProtoFieldCodec, V: ProtoFieldCodec>(
        _ key: K.Type, _ value: V.Type, _ entryKey: K.Value, _ entryValue: V.Value, tag: UInt32
    ) {
        let mark = bytesWritten
        writeField(V.self, entryValue, tag: FieldTag(fieldNumber: 2, wireType: V.wireType).rawValue)
        writeField(K.self, entryKey, tag: FieldTag(fieldNumber: 1, wireType: K.wireType).rawValue)
        writeVarint(UInt64(bytesWritten - mark))
        writeTag(tag)
    }

    /// Writes fields kept from decoding, as they were.
    @inlinable
    public mutating func writeUnknownFields(_ fields: UnknownFields) {
        fields.bytes.withUnsafeBytes { writeRawBytes($0) }
    }
}
