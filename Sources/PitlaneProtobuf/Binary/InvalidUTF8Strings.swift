/// The original bytes of unverified `string` values (proto2, editions' `utf8_validation = NONE`)
/// that arrived as invalid UTF-8.
///
/// A Swift `String` holds only valid Unicode, so such a field reads as its repaired form
/// (each ill-formed sequence becomes U+FFFD). C++ keeps the bytes, and so does this runtime:
/// the decoder records them here, keyed by field number and element index, and the encoder
/// writes them back for as long as the field still holds the repaired string. A value set
/// since is written as set. A round trip through Pitlane therefore never changes a message
/// another runtime wrote.
///
/// The record lives in the message's ``UnknownFields`` (it is, like them, what the schema's
/// types cannot hold), so it takes part in equality: two messages that hold different invalid
/// bytes are not equal, as their encodings differ.
///
/// ```swift
/// let message = try Legacy(serializedBytes: bytes)     // name: 0x66 0xFF
/// message.name                                          // "f\u{FFFD}"
/// message.unknownFields.invalidUTF8.bytes(of: message.name, fieldNumber: 3)   // [0x66, 0xFF]
/// ```
public struct InvalidUTF8Strings: Hashable, Sendable {
    @usableFromInline
    struct Entry: Hashable, Sendable {
        var fieldNumber: Int32
        var index: Int32
        var bytes: [UInt8]
        var repaired: String
    }

    @usableFromInline
    var entries: [Entry] = []

    public init() {}

    /// Whether no invalid string is recorded (the case for every message whose strings are UTF-8).
    @inlinable
    public var isEmpty: Bool { entries.isEmpty }

    /// The bytes `value` is written as when it is element `index` (0 for a singular field) of
    /// field `fieldNumber`: the bytes it was decoded from if they were invalid UTF-8 and the
    /// field still holds their repaired form, otherwise nil (the value's own UTF-8).
    public func bytes(of value: String, fieldNumber: Int, index: Int = 0) -> [UInt8]? {
        guard let entry = entries.first(where: { $0.fieldNumber == fieldNumber && $0.index == index }) else { return nil }
        var repaired = entry.repaired
        var value = value
        let same = repaired.withUTF8 { expected in
            value.withUTF8 { actual in expected.elementsEqual(actual) }
        }
        return same ? entry.bytes : nil
    }

    /// Records what element `index` of field `fieldNumber` was decoded from, replacing an
    /// earlier record of the same element (a singular field read twice: the last one wins).
    mutating func record(_ bytes: [UInt8], repaired: String, fieldNumber: Int, index: Int) {
        forget(fieldNumber: fieldNumber, index: index)
        entries.append(Entry(fieldNumber: Int32(fieldNumber), index: Int32(index), bytes: bytes, repaired: repaired))
    }

    mutating func forget(fieldNumber: Int, index: Int) {
        entries.removeAll { $0.fieldNumber == fieldNumber && $0.index == index }
    }
}

// MARK: Reading and writing

extension UnknownFields {
    /// Notes what element `index` of unverified string field `fieldNumber` was decoded from:
    /// its bytes when `string` had to repair them, nothing (and no stale record) otherwise.
    @usableFromInline
    mutating func noteUnverifiedString(_ string: String, from bytes: UnsafeBufferPointer<UInt8>, fieldNumber: Int, index: Int) {
        if !UTF8Check.decodedUnchanged(string, from: bytes) {
            invalidUTF8.record(Array(bytes), repaired: string, fieldNumber: fieldNumber, index: index)
        } else if !invalidUTF8.isEmpty {
            invalidUTF8.forget(fieldNumber: fieldNumber, index: index)
        }
    }
}

extension ProtoReader {
    /// Reads element `index` of unverified string field `fieldNumber`; invalid UTF-8 reads as
    /// its repaired form and its bytes are recorded in `unknownFields.invalidUTF8`.
    @inlinable
    public mutating func readUnverifiedString(fieldNumber: Int, index: Int = 0, recordingIn unknownFields: inout UnknownFields) throws -> String {
        let bytes = try readLengthDelimited().assumingMemoryBound(to: UInt8.self)
        let string = String(decoding: bytes, as: UTF8.self)
        if !UTF8Check.isASCII(bytes) || !unknownFields.invalidUTF8.isEmpty {
            unknownFields.noteUnverifiedString(string, from: bytes, fieldNumber: fieldNumber, index: index)
        }
        return string
    }
}

extension ProtoWriter {
    /// Writes element `index` of unverified string field `fieldNumber`, as the bytes it was
    /// decoded from when those were invalid UTF-8 (see ``InvalidUTF8Strings``).
    @inlinable
    public mutating func writeUnverifiedString(_ value: String, tag: UInt32, fieldNumber: Int, index: Int = 0, recorded: UnknownFields) {
        if !recorded.invalidUTF8.isEmpty, let bytes = recorded.invalidUTF8.bytes(of: value, fieldNumber: fieldNumber, index: index) {
            writeBytes(bytes)
        } else {
            writeString(value)
        }
        writeTag(tag)
    }

    /// Writes a repeated unverified string field, element by element.
    @inlinable
    public mutating func writeRepeatedUnverifiedStrings(_ values: [String], tag: UInt32, fieldNumber: Int, recorded: UnknownFields) {
        guard !recorded.invalidUTF8.isEmpty else { return writeRepeated(ProtoUnverifiedString.self, values, tag: tag) }
        var index = values.count
        while index > 0 {
            index -= 1
            writeUnverifiedString(values[index], tag: tag, fieldNumber: fieldNumber, index: index, recorded: recorded)
        }
    }
}

extension ProtoSize {
    /// The size of element `index` of an unverified string field, tag included.
    @inlinable
    public static func unverifiedString(_ value: String, tagSize: Int, fieldNumber: Int, index: Int = 0, recorded: UnknownFields) -> Int {
        if !recorded.invalidUTF8.isEmpty, let bytes = recorded.invalidUTF8.bytes(of: value, fieldNumber: fieldNumber, index: index) {
            return tagSize + lengthDelimited(bytes.count)
        }
        return tagSize + lengthDelimited(value.utf8.count)
    }

    /// The size of a repeated unverified string field.
    @inlinable
    public static func repeatedUnverifiedStrings(_ values: [String], tagSize: Int, fieldNumber: Int, recorded: UnknownFields) -> Int {
        guard !recorded.invalidUTF8.isEmpty else { return repeated(ProtoUnverifiedString.self, values, tagSize: tagSize) }
        var size = 0
        for (index, value) in values.enumerated() {
            size += unverifiedString(value, tagSize: tagSize, fieldNumber: fieldNumber, index: index, recorded: recorded)
        }
        return size
    }
}
