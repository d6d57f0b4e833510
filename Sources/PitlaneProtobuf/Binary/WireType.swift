/// The wire type in the low three bits of a field tag.
public enum WireType: UInt8, Sendable {
    /// A base-128 varint: `int32`, `int64`, `uint32`, `uint64`, `sint32`, `sint64`, `bool` and enums.
    case varint = 0
    /// Eight little-endian bytes: `fixed64`, `sfixed64` and `double`.
    case fixed64 = 1
    /// A varint length, then that many bytes: strings, bytes, messages, map entries and packed repeated fields.
    case lengthDelimited = 2
    /// Opens a group (proto2 groups, editions' `DELIMITED` message encoding); its fields follow.
    case startGroup = 3
    /// Closes the group opened by the START_GROUP tag with the same field number.
    case endGroup = 4
    /// Four little-endian bytes: `fixed32`, `sfixed32` and `float`.
    case fixed32 = 5
}

/// A field tag: `fieldNumber << 3 | wireType`.
public struct FieldTag: Hashable, Sendable {
    /// The tag as it appears on the wire (before varint encoding).
    public let rawValue: UInt32

    /// A tag from its wire value, `fieldNumber << 3 | wireType`; the wire type must be 0 to 5.
    @inlinable
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// The tag of field `fieldNumber` carrying a value of `wireType`.
    @inlinable
    public init(fieldNumber: Int, wireType: WireType) {
        rawValue = UInt32(fieldNumber) << 3 | UInt32(wireType.rawValue)
    }

    /// The field number, from the bits above the wire type.
    @inlinable
    public var fieldNumber: Int { Int(rawValue >> 3) }

    /// The wire type; tags with the reserved types 6 and 7 are rejected by the reader.
    @inlinable
    public var wireType: WireType { WireType(rawValue: UInt8(rawValue & 7))! }

    /// The largest field number protobuf allows.
    public static let maxFieldNumber = (1 << 29) - 1
}
