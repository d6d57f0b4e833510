/// Fields a message's schema does not know, kept as their wire bytes in the order read.
///
/// They are written back after the known fields, so a message passing through a program
/// built against an older schema loses nothing.
public struct UnknownFields: Hashable, Sendable {
    /// The fields' wire bytes: tags and values as they arrived.
    public private(set) var bytes: [UInt8] = []

    /// The original bytes of unverified string fields that were not valid UTF-8 (empty for
    /// nearly every message); see ``InvalidUTF8Strings``.
    public internal(set) var invalidUTF8 = InvalidUTF8Strings()

    /// No unknown fields.
    public init() {}

    /// Whether no unknown field was kept.
    @inlinable
    public var isEmpty: Bool { bytes.isEmpty }

    /// The bytes the unknown fields add to the message's encoding.
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

// MARK: Equality

extension UnknownFields {
    /// Equal when they hold the same fields: the order of fields with different numbers
    /// carries no meaning (extensions set in another order, or read from another runtime's
    /// output, compare equal), while fields of one number keep their order.
    public static func == (lhs: UnknownFields, rhs: UnknownFields) -> Bool {
        guard lhs.bytes.count == rhs.bytes.count, lhs.invalidUTF8 == rhs.invalidUTF8 else { return false }
        if lhs.bytes == rhs.bytes { return true }
        guard let left = lhs.fieldsByNumber(), let right = rhs.fieldsByNumber() else { return false }
        return left.count == right.count && zip(left, right).allSatisfy { lhs.bytes[$0.range] == rhs.bytes[$1.range] }
    }

    /// Hashes what equality sees regardless of field order.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        hasher.combine(invalidUTF8)
    }

    /// Each field's number and byte range, in a stable sort by number; nil when the bytes do
    /// not parse (then only identical bytes are equal).
    private func fieldsByNumber() -> [(number: Int, range: Range<Int>)]? {
        var fields: [(number: Int, range: Range<Int>)] = []
        let parsed: Bool = bytes.withUnsafeBytes { buffer in
            var reader = ProtoReader(buffer)
            do {
                while let tag = try reader.nextTag() {
                    let start = reader.fieldStart - reader.base
                    try reader.skipField(tag)
                    fields.append((tag.fieldNumber, start..<(reader.cursor - reader.base)))
                }
                return true
            } catch {
                return false
            }
        }
        guard parsed else { return nil }
        return fields.enumerated()
            .sorted { ($0.element.number, $0.offset) < ($1.element.number, $1.offset) }
            .map(\.element)
    }
}
