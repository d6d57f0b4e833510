import PitlaneCore

/// Splits a body into enveloped messages (gRPC's, gRPC-Web's and Connect's): each is a flags
/// byte, a 4-byte big-endian length and that many bytes, and may span frames or share one
/// with others.
struct MessageDeframer {
    /// The largest message accepted; a longer length prefix fails at once, before buffering.
    let maxMessageBytes: Int
    /// The flag bits the protocol defines in this direction: 0x01 compressed everywhere;
    /// 0x80 gRPC-Web trailers, 0x02 Connect's end of stream, in responses.
    let acceptedFlags: UInt8
    private(set) var buffer: [UInt8] = []
    private var consumed = 0

    init(maxMessageBytes: Int, acceptedFlags: UInt8 = 0x01) {
        self.maxMessageBytes = maxMessageBytes
        self.acceptedFlags = acceptedFlags
    }

    /// Bytes held for a message not yet complete.
    var bufferedBytes: Int { buffer.count - consumed }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete message and its flags, or nil until more bytes come.
    mutating func next() throws -> (flags: UInt8, bytes: [UInt8])? {
        guard bufferedBytes >= 5 else { return nil }
        let flag = buffer[consumed]
        guard flag & ~acceptedFlags == 0 else {
            throw RPCError(code: .internal, message: "invalid message flags \(flag)")
        }
        let length =
            Int(buffer[consumed + 1]) << 24 | Int(buffer[consumed + 2]) << 16
            | Int(buffer[consumed + 3]) << 8 | Int(buffer[consumed + 4])
        guard length <= maxMessageBytes else {
            throw RPCError(code: .resourceExhausted, message: "message of \(length) bytes exceeds the limit of \(maxMessageBytes)")
        }
        guard bufferedBytes >= 5 + length else { return nil }
        let start = consumed + 5
        let message = Array(buffer[start..<start + length])
        consumed = start + length
        if consumed == buffer.count {
            // Nothing held, and no buffer kept: a stream waiting for its next message holds no
            // bytes (up to 64 KiB were kept per stream, for a stream that may never send again).
            buffer = []
            consumed = 0
        } else if consumed > 65_536 {
            buffer.removeFirst(consumed)
            consumed = 0
        }
        return (flag, message)
    }
}

/// Writes the 5-byte gRPC message prefix.
package enum MessageFramer {
    package static func prefix(length: Int, compressed: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(5)
        appendPrefix(length: length, compressed: compressed, to: &bytes)
        return bytes
    }

    static func appendPrefix(length: Int, compressed: Bool, to bytes: inout [UInt8]) {
        bytes.append(compressed ? 1 : 0)
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: length >> shift)) }
    }
}
