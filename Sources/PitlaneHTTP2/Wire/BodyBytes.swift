import PitlaneCore

/// Bytes for a body: a message and, when it travels in an envelope, its 5-byte prefix (flags
/// and big-endian length) kept apart from it. A message serialized once for many streams (a
/// race tick to every follower) is framed for each of them without a copy of its bytes: each
/// stream's queue holds the same array.
package struct BodyBytes: Sendable {
    /// The envelope's flags byte, or nil for bytes sent as they are.
    package let envelopeFlags: UInt8?
    /// The message (the envelope's payload), or the whole body when there is no envelope.
    package let payload: [UInt8]

    /// Bytes sent as they are.
    package init(_ bytes: [UInt8]) {
        envelopeFlags = nil
        payload = bytes
    }

    /// `payload` in an envelope with `flags` (0 plain, 1 compressed; Connect's end of
    /// stream 2).
    package init(enveloping payload: [UInt8], flags: UInt8) {
        envelopeFlags = flags
        self.payload = payload
    }

    /// The payload in a gRPC envelope, compressed first when an algorithm is given.
    package static func enveloping(_ message: [UInt8], compression: CompressionAlgorithm?) throws -> BodyBytes {
        guard let compression else { return BodyBytes(enveloping: message, flags: 0) }
        return BodyBytes(enveloping: try MessageCompression.compress(message, with: compression), flags: 1)
    }

    private var envelopeCount: Int { envelopeFlags == nil ? 0 : 5 }

    /// Bytes on the wire, the envelope's prefix included.
    package var count: Int { envelopeCount + payload.count }
    package var isEmpty: Bool { count == 0 }

    /// The byte at `index` of the prefix: the flags, then the length from its high byte.
    private func prefixByte(_ index: Int) -> UInt8 {
        index == 0 ? envelopeFlags! : UInt8(truncatingIfNeeded: payload.count >> (8 * (4 - index)))
    }

    /// Copies the bytes from `start` into `destination`, as many as fit; returns how many.
    package func copy(from start: Int, into destination: UnsafeMutableRawBufferPointer) -> Int {
        var position = start
        var copied = 0
        while position < envelopeCount, copied < destination.count {
            destination[copied] = prefixByte(position)
            position += 1
            copied += 1
        }
        let payloadStart = position - envelopeCount
        let take = Swift.min(payload.count - payloadStart, destination.count - copied)
        guard take > 0 else { return copied }
        payload.withUnsafeBytes { source in
            UnsafeMutableRawBufferPointer(rebasing: destination[copied..<copied + take])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[payloadStart..<payloadStart + take]))
        }
        return copied + take
    }

    /// Appends every byte to `bytes`.
    package func append(to bytes: inout [UInt8]) {
        if envelopeFlags != nil {
            for index in 0..<5 { bytes.append(prefixByte(index)) }
        }
        bytes.append(contentsOf: payload)
    }

    /// Every byte in one array (a copy when there is an envelope).
    package var joined: [UInt8] {
        guard envelopeFlags != nil else { return payload }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        append(to: &bytes)
        return bytes
    }
}
