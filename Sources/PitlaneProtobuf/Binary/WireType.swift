/// The wire type in the low three bits of a field tag.
public enum WireType: UInt8, Sendable {
    case varint = 0
    case fixed64 = 1
    case lengthDelimited = 2
    case startGroup = 3
    case endGroup = 4
    case fixed32 = 5
}

/// A field tag: `fieldNumber << 3 | wireType`.
public struct FieldTag: Hashable, Sendable {
    /// The tag as it appears on the wire (before varint encoding).
    public let rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    @inlinable
    public init(fieldNumber: Int, wireType: WireType) {
        rawValue = UInt32(fieldNumber) << 3 | UInt32(wireType.rawValue)
    }

    @inlinable
    public var fieldNumber: Int { Int(rawValue >> 3) }

    /// The wire type; tags with the reserved types 6 and 7 are rejected by the reader.
    @inlinable
    public var wireType: WireType { WireType(rawValue: UInt8(rawValue & 7))! }

    /// The largest field number protobuf allows.
    public static let maxFieldNumber = (1 << 29) - 1
}
