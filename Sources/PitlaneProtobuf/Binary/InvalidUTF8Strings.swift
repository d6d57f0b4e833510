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
    /// Where in its field a value sits: an element (0 for a singular field), or a map entry
    /// by its key's wire bytes.
    @usableFromInline
    enum Place: Hashable, Sendable {
        case element(Int)
        case mapValue(key: [UInt8])
    }

    @usableFromInline
    struct Entry: Hashable, Sendable {
        var fieldNumber: Int32
        var place: Place
        var bytes: [UInt8]
        var repaired: String
    }

    @usableFromInline
    var entries: [Entry] = []

    /// A record of no invalid strings.
    public init() {}

    /// Whether no invalid string is recorded (the case for every message whose strings are UTF-8).
    @inlinable
    public var isEmpty: Bool { entries.isEmpty }

    /// The bytes `value` is written as when it is element `index` (0 for a singular field) of
    /// field `fieldNumber`: the bytes it was decoded from if they were invalid UTF-8 and the
    /// field still holds their repaired form, otherwise nil (the value's own UTF-8).
    public func bytes(of value: String, fieldNumber: Int, index: Int = 0) -> [UInt8]? {
        bytes(of: value, fieldNumber: fieldNumber, place: .element(index))
    }

    /// The same for the value under `key` in map field `fieldNumber`.
    public func bytes<K: ProtoFieldCodec>(ofMapValue value: String, key: K.Value, _ keyCodec: K.Type, fieldNumber: Int) -> [UInt8]? {
        bytes(of: value, fieldNumber: fieldNumber, place: .mapValue(key: Self.wireBytes(K.self, key)))
    }

    /// Whether any value of field `fieldNumber` is recorded.
    @usableFromInline
    func records(fieldNumber: Int) -> Bool {
        entries.contains { $0.fieldNumber == fieldNumber }
    }

    func bytes(of value: String, fieldNumber: Int, place: Place) -> [UInt8]? {
        guard let entry = entries.first(where: { $0.fieldNumber == fieldNumber && $0.place == place }) else { return nil }
        var repaired = entry.repaired
        var value = value
        let same = repaired.withUTF8 { expected in
            value.withUTF8 { actual in expected.elementsEqual(actual) }
        }
        return same ? entry.bytes : nil
    }

    /// Records what a value was decoded from, replacing an earlier record of the same place
    /// (a singular field read twice: the last one wins).
    mutating func record(_ bytes: [UInt8], repaired: String, fieldNumber: Int, place: Place) {
        forget(fieldNumber: fieldNumber, place: place)
        entries.append(Entry(fieldNumber: Int32(fieldNumber), place: place, bytes: bytes, repaired: repaired))
    }

    mutating func forget(fieldNumber: Int, place: Place) {
        entries.removeAll { $0.fieldNumber == fieldNumber && $0.place == place }
    }

    /// Equal when they record the same values, in whatever order they were read (map
    /// entries arrive in any order).
    public static func == (lhs: InvalidUTF8Strings, rhs: InvalidUTF8Strings) -> Bool {
        lhs.entries.count == rhs.entries.count && lhs.entries.allSatisfy(rhs.entries.contains)
    }

    /// Hashes the number of recorded values, which does not depend on the order they were read in.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(entries.count)
    }

    /// A map key's value as written on the wire (without tag), which identifies its entry.
    static func wireBytes<K: ProtoFieldCodec>(_ codec: K.Type, _ key: K.Value) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: K.size(of: key))
        bytes.withUnsafeMutableBytes { buffer in
            var writer = ProtoWriter(filling: buffer)
            K.write(key, to: &writer)
        }
        return bytes
    }
}

// MARK: Reading and writing

extension UnknownFields {
    /// Notes what element `index` of unverified string field `fieldNumber` was decoded from:
    /// its bytes when `string` had to repair them, nothing (and no stale record) otherwise.
    @usableFromInline
    mutating func noteUnverifiedString(_ string: String, from bytes: UnsafeBufferPointer<UInt8>, fieldNumber: Int, index: Int) {
        note(string, from: bytes, fieldNumber: fieldNumber, place: .element(index))
    }

    /// The same for the value of a map entry under `key`.
    @usableFromInline
    mutating func noteUnverifiedMapValue<K: ProtoFieldCodec>(
        _ string: String, from bytes: UnsafeBufferPointer<UInt8>, key: K.Value, _ keyCodec: K.Type, fieldNumber: Int
    ) {
        let valid = UTF8Check.decodedUnchanged(string, from: bytes)
        guard !valid || invalidUTF8.records(fieldNumber: fieldNumber) else { return }
        note(string, from: bytes, fieldNumber: fieldNumber, place: .mapValue(key: InvalidUTF8Strings.wireBytes(K.self, key)))
    }

    private mutating func note(_ string: String, from bytes: UnsafeBufferPointer<UInt8>, fieldNumber: Int, place: InvalidUTF8Strings.Place)
    {
        if !UTF8Check.decodedUnchanged(string, from: bytes) {
            invalidUTF8.record(Array(bytes), repaired: string, fieldNumber: fieldNumber, place: place)
        } else if !invalidUTF8.isEmpty {
            invalidUTF8.forget(fieldNumber: fieldNumber, place: place)
        }
    }
}

extension ProtoReader {
    /// Reads element `index` of unverified string field `fieldNumber`; invalid UTF-8 reads as
    /// its repaired form and its bytes are recorded in `unknownFields.invalidUTF8`.
    @inlinable
    public mutating func readUnverifiedString(
        fieldNumber: Int, index: Int = 0, recordingIn unknownFields: inout UnknownFields
    ) throws -> String {
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

// MARK: Maps with unverified string values

extension ProtoReader {
    /// Reads one entry of a map whose values are unverified strings; a value that is not
    /// UTF-8 reads repaired and its bytes are recorded under the entry's key.
    @inlinable
    public mutating func readUnverifiedStringMapEntry<K: ProtoFieldCodec>(
        _ key: K.Type, into map: inout [K.Value: String], fieldNumber: Int, unknownFields: inout UnknownFields
    ) throws {
        let length = try readLength()
        let outerLimit = limit
        let outerGroup = groupNumber
        let number = self.fieldNumber
        try enterNested()
        limit = cursor + length
        groupNumber = 0
        var entryKey = K.defaultValue
        var entryValue = ""
        var valueBytes = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        do {
            while let tag = try nextTag() {
                switch tag.rawValue {
                case FieldTag(fieldNumber: 1, wireType: K.wireType).rawValue:
                    entryKey = try K.read(from: &self)
                case FieldTag(fieldNumber: 2, wireType: .lengthDelimited).rawValue:
                    valueBytes = try readLengthDelimited().assumingMemoryBound(to: UInt8.self)
                    entryValue = String(decoding: valueBytes, as: UTF8.self)
                default:
                    try skipField(tag)
                }
            }
        } catch var failure as ProtobufDecodingError {
            failure.path.insert(number, at: 0)
            throw failure
        }
        map[entryKey] = entryValue
        if !UTF8Check.isASCII(valueBytes) || !unknownFields.invalidUTF8.isEmpty {
            unknownFields.noteUnverifiedMapValue(entryValue, from: valueBytes, key: entryKey, K.self, fieldNumber: fieldNumber)
        }
        depth -= 1
        limit = outerLimit
        groupNumber = outerGroup
        self.fieldNumber = number
    }
}

extension ProtoWriter {
    /// Writes a map whose values are unverified strings, each value as the bytes it was
    /// decoded from when those were invalid UTF-8.
    @inlinable
    public mutating func writeUnverifiedStringMap<K: ProtoMapKeyCodec>(
        _ key: K.Type, _ map: [K.Value: String], tag: UInt32, fieldNumber: Int, recorded: UnknownFields
    ) {
        guard recorded.invalidUTF8.records(fieldNumber: fieldNumber) else {
            return writeMap(K.self, ProtoUnverifiedString.self, map, tag: tag)
        }
        let entries = deterministic ? map.sorted { K.precedes($0.key, $1.key) } : Array(map)
        for (entryKey, entryValue) in entries.reversed() {
            guard let bytes = recorded.invalidUTF8.bytes(ofMapValue: entryValue, key: entryKey, K.self, fieldNumber: fieldNumber) else {
                writeMapEntry(K.self, ProtoUnverifiedString.self, entryKey, entryValue, tag: tag)
                continue
            }
            let mark = bytesWritten
            writeBytes(bytes)
            writeTag(FieldTag(fieldNumber: 2, wireType: .lengthDelimited).rawValue)
            writeField(K.self, entryKey, tag: FieldTag(fieldNumber: 1, wireType: K.wireType).rawValue)
            writeVarint(UInt64(bytesWritten - mark))
            writeTag(tag)
        }
    }
}

extension ProtoSize {
    /// Bytes a map with unverified string values takes.
    @inlinable
    public static func unverifiedStringMap<K: ProtoFieldCodec>(
        _ key: K.Type, _ map: [K.Value: String], tagSize: Int, fieldNumber: Int, recorded: UnknownFields
    ) -> Int {
        guard recorded.invalidUTF8.records(fieldNumber: fieldNumber) else {
            return self.map(K.self, ProtoUnverifiedString.self, map, tagSize: tagSize)
        }
        var total = map.count * tagSize
        for (entryKey, entryValue) in map {
            let valueCount =
                recorded.invalidUTF8.bytes(ofMapValue: entryValue, key: entryKey, K.self, fieldNumber: fieldNumber)?.count
                ?? entryValue.utf8.count
            total += lengthDelimited(2 + K.size(of: entryKey) + lengthDelimited(valueCount))
        }
        return total
    }
}
