/// Fields a message's schema does not know, kept as their wire bytes in the order read.
///
/// They are written back after the known fields, so a message passing through a program
/// built against an older schema loses nothing.
public struct UnknownFields: Hashable, Sendable {
    /// The fields' wire bytes: tags and values as they arrived.
    public private(set) var bytes: [UInt8] = []

    public init() {}

    @inlinable
    public var isEmpty: Bool { bytes.isEmpty }

    @inlinable
    public var encodedSize: Int { bytes.count }

    /// Appends whole fields (tags included) in wire format.
    public mutating func append(_ fields: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: fields)
    }

    mutating func replaceBytes(_ newBytes: [UInt8]) {
        bytes = newBytes
    }

    /// Appends a varint field, as for a closed enum value the schema does not name.
    public mutating func appendVarint(fieldNumber: Int, value: UInt64) {
        appendVarint(UInt64(FieldTag(fieldNumber: fieldNumber, wireType: .varint).rawValue))
        appendVarint(value)
    }

    private mutating func appendVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }
}
