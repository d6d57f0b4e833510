import PitlaneCore

/// Turns a request or response body into messages, whichever protocol framed it: 5-byte
/// envelopes (gRPC, gRPC-Web, Connect streaming), base64 of envelopes (gRPC-Web text), or the
/// whole body as one message (Connect unary). Client and server share it.
package struct MessageBodyDecoder {
    /// How a body carries its messages.
    package enum Layout {
        /// Envelopes whose flags byte may have these bits.
        case envelopes(acceptedFlags: UInt8)
        case base64Envelopes
        case wholeBody
    }

    private enum Framing {
        case enveloped(MessageDeframer)
        /// Base64 text decoded a quantum of four characters at a time; `pending` holds a
        /// quantum's first characters until the rest arrive.
        case base64Enveloped(MessageDeframer, pending: [UInt8])
        case wholeBody([UInt8])
    }

    private var framing: Framing
    private let maxMessageBytes: Int

    package init(_ layout: Layout, maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
        switch layout {
        case .envelopes(let flags): framing = .enveloped(MessageDeframer(maxMessageBytes: maxMessageBytes, acceptedFlags: flags))
        case .base64Envelopes: framing = .base64Enveloped(MessageDeframer(maxMessageBytes: maxMessageBytes), pending: [])
        case .wholeBody: framing = .wholeBody([])
        }
    }

    /// Whether the window for received bytes goes back as they arrive, instead of as
    /// messages are read: base64 text, whose wire bytes are not the messages' bytes.
    package var returnsWindowOnReceipt: Bool {
        if case .base64Enveloped = framing { return true }
        return false
    }

    /// Whether the body is one message (no envelopes).
    package var isWholeBody: Bool {
        if case .wholeBody = framing { return true }
        return false
    }

    /// Bytes held for a message not yet complete (as received on the wire).
    package var bufferedBytes: Int {
        switch framing {
        case .enveloped(let deframer): deframer.bufferedBytes
        case .base64Enveloped(let deframer, let pending): deframer.bufferedBytes + pending.count
        case .wholeBody(let body): body.count
        }
    }

    /// Takes received body bytes; throws when they cannot be a valid body.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) throws {
        switch framing {
        case .enveloped(var deframer):
            framing = .wholeBody([])  // drop the reference, so the append does not copy
            deframer.append(bytes)
            framing = .enveloped(deframer)
        case .base64Enveloped(var deframer, var pending):
            framing = .wholeBody([])
            try Base64Quanta.decode(bytes, pending: &pending) { decoded in
                decoded.withUnsafeBytes { deframer.append($0) }
            }
            framing = .base64Enveloped(deframer, pending: pending)
        case .wholeBody(var body):
            guard body.count + bytes.count <= maxMessageBytes else {
                throw RPCError(code: .resourceExhausted, message: "the body exceeds the limit of \(maxMessageBytes) bytes")
            }
            framing = .wholeBody([])
            body.append(contentsOf: bytes)
            framing = .wholeBody(body)
        }
    }

    /// The next complete enveloped message, or nil until more bytes come (always nil for a
    /// whole-body request: its message is complete at the end).
    package mutating func next() throws -> (flags: UInt8, bytes: [UInt8])? {
        switch framing {
        case .enveloped(var deframer):
            framing = .wholeBody([])
            defer { framing = .enveloped(deframer) }
            return try deframer.next()
        case .base64Enveloped(var deframer, let pending):
            framing = .wholeBody([])
            defer { framing = .base64Enveloped(deframer, pending: pending) }
            return try deframer.next()
        case .wholeBody:
            return nil
        }
    }

    /// The body ended: a whole body's message, or an error for an envelope cut short.
    package mutating func finish() throws -> [UInt8]? {
        switch framing {
        case .wholeBody(let body):
            framing = .wholeBody([])
            return body
        case .enveloped(let deframer), .base64Enveloped(let deframer, pending: []):
            guard deframer.bufferedBytes == 0 else {
                throw RPCError(code: .internal, message: "the body ended inside a message (\(deframer.bufferedBytes) bytes of it)")
            }
            return nil
        case .base64Enveloped:
            throw RPCError(code: .internal, message: "the body's base64 text ended inside a quantum")
        }
    }
}

/// Base64 (RFC 4648, standard alphabet) decoded in four-character quanta as bytes arrive.
/// A padded quantum may end any chunk, so text that a client encoded piece by piece and
/// sent concatenated decodes as it should.
package enum Base64Quanta {
    package static func decode(_ input: UnsafeRawBufferPointer, pending: inout [UInt8], into output: ([UInt8]) -> Void) throws {
        var decoded: [UInt8] = []
        decoded.reserveCapacity((pending.count + input.count) / 4 * 3)
        for byte in input {
            if byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n") { continue }
            pending.append(byte)
            guard pending.count == 4 else { continue }
            try decodeQuantum(pending, into: &decoded)
            pending.removeAll(keepingCapacity: true)
        }
        if !decoded.isEmpty { output(decoded) }
    }

    private static func decodeQuantum(_ quantum: [UInt8], into output: inout [UInt8]) throws {
        var value: UInt32 = 0
        var padding = 0
        for (index, character) in quantum.enumerated() {
            if character == UInt8(ascii: "=") {
                guard index >= 2 else { throw invalid }
                padding += 1
                value <<= 6
                continue
            }
            guard padding == 0, let sextet = sextet(character) else { throw invalid }
            value = value << 6 | UInt32(sextet)
        }
        output.append(UInt8(truncatingIfNeeded: value >> 16))
        if padding < 2 { output.append(UInt8(truncatingIfNeeded: value >> 8)) }
        if padding < 1 { output.append(UInt8(truncatingIfNeeded: value)) }
    }

    private static let invalid = RPCError(code: .internal, message: "the body is not valid base64")

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"), UInt8(ascii: "-"): 62
        case UInt8(ascii: "/"), UInt8(ascii: "_"): 63
        default: nil
        }
    }
}

extension Base64Quanta {
    /// Decodes a whole text, padded or not (Connect's GET `base64=1` is URL-safe, unpadded).
    package static func decodeAll(_ text: [UInt8]) throws -> [UInt8] {
        var padded = text
        if padded.count % 4 != 0 { padded += Array(repeating: UInt8(ascii: "="), count: 4 - padded.count % 4) }
        var pending: [UInt8] = []
        var result: [UInt8] = []
        try padded.withUnsafeBytes { try decode($0, pending: &pending) { result = $0 } }
        return result
    }
}
