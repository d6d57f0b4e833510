/// Encoded sizes of wire-format pieces, for generated `encodedSize()` methods.
public enum ProtoSize {
    /// Bytes a varint takes: 1 to 10.
    @inlinable
    public static func varint(_ value: UInt64) -> Int {
        // Significant bits, rounded up to 7-bit groups, without a loop or a branch.
        let bits = 64 - (value | 1).leadingZeroBitCount
        return (bits * 9 + 64) >> 6
    }

    /// Bytes a length prefix and the payload take.
    @inlinable
    public static func lengthDelimited(_ count: Int) -> Int {
        varint(UInt64(count)) + count
    }

    /// Bytes a field takes: tag size plus value.
    @inlinable
    public static func field<C: ProtoFieldCodec>(_ codec: C.Type, _ value: C.Value, tagSize: Int) -> Int {
        tagSize + C.size(of: value)
    }

    /// Bytes a repeated field takes with each element tagged.
    @inlinable
    public static func repeated<C: ProtoFieldCodec>(_ codec: C.Type, _ values: [C.Value], tagSize: Int) -> Int {
        if let width = C.fixedWidth { return values.count * (tagSize + width) }
        var total = values.count * tagSize
        // Borrowed from the buffer, as ProtoWriter.writeRepeated does: no copy per element.
        values.withUnsafeBufferPointer { elements in
            for index in elements.indices { total += C.size(of: elements[index]) }
        }
        return total
    }

    /// Bytes a packed repeated field takes; 0 when empty.
    @inlinable
    public static func packed<C: ProtoFieldCodec>(_ codec: C.Type, _ values: [C.Value], tagSize: Int) -> Int {
        guard !values.isEmpty else { return 0 }
        var payload: Int
        if let width = C.fixedWidth {
            payload = values.count * width
        } else {
            payload = 0
            values.withUnsafeBufferPointer { elements in
                for index in elements.indices { payload += C.size(of: elements[index]) }
            }
        }
        return tagSize + lengthDelimited(payload)
    }

    /// Bytes a map field takes, each entry a length-delimited message with key and value.
    @inlinable
    public static func map<K: ProtoFieldCodec, V: ProtoFieldCodec>(
        _ key: K.Type, _ value: V.Type, _ map: [K.Value: V.Value], tagSize: Int
    ) -> Int {
        var total = map.count * tagSize
        for (entryKey, entryValue) in map {
            // Map entry tags for fields 1 and 2 take one byte each.
            total += lengthDelimited(2 + K.size(of: entryKey) + V.size(of: entryValue))
        }
        return total
    }

    /// Bytes a group takes: both tags and the fields between them.
    @inlinable
    public static func group<M: Message>(_ message: M, tagSize: Int) -> Int {
        2 * tagSize + message.encodedSize()
    }
}
