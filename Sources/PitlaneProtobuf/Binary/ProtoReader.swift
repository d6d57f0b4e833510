/// Reads protobuf wire format from a borrowed buffer.
///
/// A reader exists only inside `withUnsafeBytes`-style scopes (see `Message.init(serializedBytes:)`);
/// generated `decodeFields(from:)` methods drive it field by field. Every read checks the
/// current limit (the end of the input or of the enclosing length-delimited message), so
/// malformed input ends in a `ProtobufDecodingError`, never an out-of-bounds access.
public struct ProtoReader {
    @usableFromInline let base: UnsafeRawPointer
    @usableFromInline var cursor: UnsafeRawPointer
    /// The end of the message being read: the input's end or a length prefix's.
    @usableFromInline var limit: UnsafeRawPointer
    /// Where the tag of the field being read starts, so unknown fields copy whole.
    @usableFromInline var fieldStart: UnsafeRawPointer
    /// The field number of the last tag read, for error paths.
    @usableFromInline var fieldNumber: Int = 0
    /// The field number of the group being read, or 0 outside groups.
    @usableFromInline var groupNumber: Int = 0
    @usableFromInline var depth: Int = 0
    @usableFromInline let options: DecodingOptions

    /// A reader over `buffer`, which must outlive it. Generated code never makes one;
    /// this is for reading wire format without generated types (descriptors, tools).
    public init(_ buffer: UnsafeRawBufferPointer, options: DecodingOptions = .defaults) {
        // An empty buffer may have no base address; any non-null pointer serves, it is never read.
        let start = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        base = start
        cursor = start
        fieldStart = start
        limit = start + buffer.count
        self.options = options
    }

    /// Bytes left before the current limit.
    @inlinable
    public var remaining: Int { limit - cursor }

    @usableFromInline
    func error(_ code: ProtobufDecodingError.Code) -> ProtobufDecodingError {
        ProtobufDecodingError(code: code, offset: cursor - base, path: fieldNumber == 0 ? [] : [fieldNumber])
    }

    // MARK: Tags

    /// The next field's tag, or nil at the end of the message or of the enclosing group.
    @inlinable
    public mutating func nextTag() throws -> FieldTag? {
        guard cursor < limit else {
            if groupNumber != 0 { throw error(.truncated) }
            return nil
        }
        fieldStart = cursor
        let raw = try readVarint()
        guard raw <= UInt64(UInt32.max), raw >> 3 != 0 else {
            throw error(.invalidFieldNumber(raw >> 3))
        }
        let tag = UInt32(truncatingIfNeeded: raw)
        fieldNumber = Int(tag >> 3)
        switch tag & 7 {
        case 4:
            guard groupNumber == fieldNumber else { throw error(.unmatchedEndGroup) }
            return nil
        case 6, 7:
            throw error(.invalidWireType(UInt8(tag & 7)))
        default:
            return FieldTag(rawValue: tag)
        }
    }

    // MARK: Scalars

    /// Reads a varint of up to 10 bytes.
    ///
    /// - Throws: `ProtobufDecodingError` with code `truncated` when the input ends inside it, or
    ///   `malformedVarint` when it runs past 10 bytes.
    @inlinable
    public mutating func readVarint() throws -> UInt64 {
        guard cursor < limit else { throw error(.truncated) }
        let first = cursor.load(as: UInt8.self)
        if first < 0x80 {
            cursor += 1
            return UInt64(first)
        }
        return try readVarintSlowPath()
    }

    @usableFromInline
    mutating func readVarintSlowPath() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var pointer = cursor
        while true {
            guard pointer < limit else { throw error(.truncated) }
            let byte = pointer.load(as: UInt8.self)
            pointer += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
            guard shift < 70 else { throw error(.malformedVarint) }
        }
        cursor = pointer
        return value
    }

    /// Reads four little-endian bytes (`fixed32`, `sfixed32` and `float` bits); throws `truncated` when fewer remain.
    @inlinable
    public mutating func readFixed32() throws -> UInt32 {
        guard remaining >= 4 else { throw error(.truncated) }
        defer { cursor += 4 }
        return UInt32(littleEndian: cursor.loadUnaligned(as: UInt32.self))
    }

    /// Reads eight little-endian bytes (`fixed64`, `sfixed64` and `double` bits); throws `truncated` when fewer remain.
    @inlinable
    public mutating func readFixed64() throws -> UInt64 {
        guard remaining >= 8 else { throw error(.truncated) }
        defer { cursor += 8 }
        return UInt64(littleEndian: cursor.loadUnaligned(as: UInt64.self))
    }

    /// Reads a length prefix and checks it fits in what remains.
    @inlinable
    public mutating func readLength() throws -> Int {
        let length = try readVarint()
        guard length <= UInt64(remaining) else { throw error(.lengthBeyondInput(length)) }
        return Int(length)
    }

    /// Reads a length-delimited field's payload as a borrowed buffer, valid while the input is.
    @inlinable
    public mutating func readLengthDelimited() throws -> UnsafeRawBufferPointer {
        let length = try readLength()
        defer { cursor += length }
        return UnsafeRawBufferPointer(start: cursor, count: length)
    }

    /// Reads a string; with `validatingUTF8` invalid UTF-8 is an error, without it invalid
    /// sequences are replaced by U+FFFD (proto2 and `utf8_validation = NONE`).
    @inlinable
    public mutating func readString(validatingUTF8: Bool) throws -> String {
        let bytes = try readLengthDelimited().assumingMemoryBound(to: UInt8.self)
        let string = String(decoding: bytes, as: UTF8.self)
        if validatingUTF8 && !UTF8Check.decodedUnchanged(string, from: bytes) {
            cursor -= bytes.count
            throw error(.invalidUTF8)
        }
        return string
    }

    /// Reads a length-delimited field's payload into a new array.
    @inlinable
    public mutating func readBytes() throws -> [UInt8] {
        Array(try readLengthDelimited())
    }

    // MARK: Nested messages and groups

    /// Reads a length-delimited message and merges it into `message`.
    @inlinable
    public mutating func readMessage<M: Message>(into message: inout M) throws {
        let length = try readLength()
        let outerLimit = limit
        let outerGroup = groupNumber
        let number = fieldNumber
        try enterNested()
        limit = cursor + length
        groupNumber = 0
        do {
            try message.decodeFields(from: &self)
        } catch var failure as ProtobufDecodingError {
            failure.path.insert(number, at: 0)
            throw failure
        }
        depth -= 1
        limit = outerLimit
        groupNumber = outerGroup
        fieldNumber = number
    }

    /// Reads a message into an optional field, merging with what is there.
    @inlinable
    public mutating func readMessage<M: Message>(into message: inout M?) throws {
        var value = message ?? M()
        try readMessage(into: &value)
        message = value
    }

    /// Reads a group (proto2 groups, editions' DELIMITED encoding) up to its END_GROUP tag.
    @inlinable
    public mutating func readGroup<M: Message>(into message: inout M) throws {
        let outerGroup = groupNumber
        let number = fieldNumber
        try enterNested()
        groupNumber = number
        do {
            try message.decodeFields(from: &self)
        } catch var failure as ProtobufDecodingError {
            failure.path.insert(number, at: 0)
            throw failure
        }
        depth -= 1
        groupNumber = outerGroup
        fieldNumber = number
    }

    /// Reads a group into an optional field, merging with what is there.
    @inlinable
    public mutating func readGroup<M: Message>(into message: inout M?) throws {
        var value = message ?? M()
        try readGroup(into: &value)
        message = value
    }

    @inlinable
    mutating func enterNested() throws {
        depth += 1
        guard depth <= options.recursionLimit else { throw error(.recursionLimitExceeded(options.recursionLimit)) }
    }

    // MARK: Repeated fields

    /// Reads one element of a repeated field, or a packed run of them, whichever the tag says.
    @inlinable
    public mutating func readRepeated<C: ProtoFieldCodec>(
        _ codec: C.Type, tag: FieldTag, into values: inout [C.Value]
    ) throws {
        guard tag.wireType == .lengthDelimited, C.wireType != .lengthDelimited else {
            values.append(try C.read(from: &self))
            return
        }
        let length = try readLength()
        // Sized once per run rather than grown by doubling (a run of 16 varints took five allocations).
        if let width = C.fixedWidth {
            guard length % width == 0 else { throw error(.invalidPackedLength(length)) }
            Self.reserve(length / width, more: &values)
        } else {
            Self.reserve(Self.varintCount(UnsafeRawBufferPointer(start: cursor, count: length)), more: &values)
        }
        let outerLimit = limit
        limit = cursor + length
        while cursor < limit {
            values.append(try C.read(from: &self))
        }
        limit = outerLimit
    }

    /// Room for `count` more elements. At least doubling when it grows: `reserveCapacity` alone
    /// allocates exactly what it is asked for, so a message of many small packed runs of one
    /// field would copy the array once per run (quadratic time for a hostile message).
    @inlinable
    static func reserve<Element>(_ count: Int, more values: inout [Element]) {
        let needed = values.count + count
        guard needed > values.capacity else { return }
        values.reserveCapacity(Swift.max(needed, 2 * values.capacity))
    }

    /// How many varints `bytes` holds: every varint ends in its one byte below 0x80. At most
    /// `bytes.count`, so what a packed run reserves is bounded by the input's size.
    @inlinable
    static func varintCount(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        var count = 0
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            count += (~word & 0x8080_8080_8080_8080).nonzeroBitCount
            offset += 8
        }
        while offset < bytes.count {
            if base.load(fromByteOffset: offset, as: UInt8.self) < 0x80 { count += 1 }
            offset += 1
        }
        return count
    }

    /// Reads one map entry (a message with key 1 and value 2) into `map`. An entry whose
    /// value is a closed enum's unknown number stays out of the map and is kept whole in
    /// `unknownFields`, as the C++ runtime does.
    @inlinable
    public mutating func readMapEntry<K: ProtoFieldCodec, V: ProtoFieldCodec>(
        _ key: K.Type, _ value: V.Type, into map: inout [K.Value: V.Value], unknownFields: inout UnknownFields
    ) throws {
        let entryStart = fieldStart
        let length = try readLength()
        let outerLimit = limit
        let outerGroup = groupNumber
        let number = fieldNumber
        try enterNested()
        limit = cursor + length
        groupNumber = 0
        var entryKey = K.defaultValue
        var entryValue = V.defaultValue
        var valueUnknown = false
        do {
            while let tag = try nextTag() {
                switch tag.rawValue {
                case FieldTag(fieldNumber: 1, wireType: K.wireType).rawValue:
                    entryKey = try K.read(from: &self)
                case FieldTag(fieldNumber: 2, wireType: V.wireType).rawValue:
                    do {
                        try V.merge(from: &self, into: &entryValue)
                    } catch is UnknownClosedEnumValue {
                        valueUnknown = true
                    }
                default:
                    try skipField(tag)
                }
            }
        } catch var failure as ProtobufDecodingError {
            failure.path.insert(number, at: 0)
            throw failure
        }
        if valueUnknown {
            if !options.discardUnknownFields {
                unknownFields.append(UnsafeRawBufferPointer(start: entryStart, count: cursor - entryStart))
            }
        } else {
            map[entryKey] = entryValue
        }
        depth -= 1
        limit = outerLimit
        groupNumber = outerGroup
        fieldNumber = number
    }

    // MARK: Unknown fields

    /// Skips the field whose tag was just read and keeps its bytes in `unknownFields`.
    @inlinable
    public mutating func readUnknownField(_ tag: FieldTag, into unknownFields: inout UnknownFields) throws {
        try skipField(tag)
        if !options.discardUnknownFields {
            unknownFields.append(UnsafeRawBufferPointer(start: fieldStart, count: cursor - fieldStart))
        }
    }

    /// Keeps the whole field just read (tag and value) in `unknownFields`, as for a closed
    /// enum's value this schema does not name.
    @inlinable
    public func preserveField(in unknownFields: inout UnknownFields) {
        if !options.discardUnknownFields {
            unknownFields.append(UnsafeRawBufferPointer(start: fieldStart, count: cursor - fieldStart))
        }
    }

    /// Skips the value of a field whose tag was just read.
    public mutating func skipField(_ tag: FieldTag) throws {
        switch tag.wireType {
        case .varint: _ = try readVarint()
        case .fixed64: _ = try readFixed64()
        case .fixed32: _ = try readFixed32()
        case .lengthDelimited: cursor += try readLength()
        case .startGroup:
            let outerGroup = groupNumber
            let start = fieldStart
            try enterNested()
            groupNumber = tag.fieldNumber
            while let inner = try nextTag() {
                try skipField(inner)
            }
            depth -= 1
            groupNumber = outerGroup
            fieldStart = start
        case .endGroup: throw error(.unmatchedEndGroup)
        }
    }
}

/// Limits and choices for binary decoding.
public struct DecodingOptions: Sendable {
    /// How deeply messages may nest before decoding fails. Default 100, as in the C++ runtime.
    public var recursionLimit: Int = 100
    /// Drop fields the schema does not know instead of keeping them. Default false.
    public var discardUnknownFields: Bool = false
    /// The largest input accepted, in bytes. Default: no limit beyond memory.
    public var sizeLimit: Int = .max

    /// The default limits: nesting depth 100, no size limit, unknown fields kept.
    public init() {}

    /// The default options, as `init()` makes them.
    public static let defaults = DecodingOptions()
}
