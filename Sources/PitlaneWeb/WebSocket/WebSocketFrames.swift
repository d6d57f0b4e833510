/// A WebSocket frame's opcode (RFC 6455 §5.2).
enum WebSocketOpcode: UInt8 {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong: never fragmented, at most 125 bytes, allowed between a
    /// message's fragments.
    var isControl: Bool { rawValue & 0x8 != 0 }
}

/// A client's frames as a server reads them (RFC 6455 §5): bytes in, whole messages and
/// control frames out, with every rule the RFC sets for a client's frames checked. No I/O:
/// the connection feeds it what it reads, in pieces of any size.
///
/// What it holds between reads is the message being assembled (nothing once it is handed
/// out), a control frame's payload (at most 125 bytes) and a header that came apart (at
/// most 14 bytes): an idle connection's decoder allocates nothing.
struct WebSocketFrameDecoder {
    /// What the client sent.
    enum Event: Equatable {
        /// A whole message, its fragments joined; text is valid UTF-8.
        case message(WebSocketMessage)
        /// A ping, whose payload the pong repeats.
        case ping([UInt8])
        case pong
        /// A close frame: its code (nil when it had none, which reads as 1005) and reason.
        /// Nothing after it is read.
        case close(WebSocketCloseCode?, reason: String)
    }

    /// The client broke the protocol or a limit: the close code to answer with, and why.
    /// Nothing more is read.
    struct Failure: Error, Equatable {
        var code: WebSocketCloseCode
        var reason: String
    }

    /// A frame's header, once whole.
    private struct Header {
        var final: Bool
        var opcode: WebSocketOpcode
        var length: Int
        /// The masking key's four bytes, the first in the lowest bits.
        var mask: UInt32
    }

    private enum State {
        /// Reading a frame's header.
        case header
        /// Reading a frame's payload; `received` bytes of it so far.
        case payload(Header, received: Int)
        /// After a close frame or a failure.
        case done
    }

    private let maxMessageBytes: Int
    private var state = State.header
    /// The first bytes of a header that came apart between reads.
    private var partialHeader: [UInt8] = []
    /// The opcode of the message whose fragments are arriving, nil between messages.
    private var messageOpcode: WebSocketOpcode?
    /// The unmasked payload of the message so far.
    private var message: [UInt8] = []
    /// The unmasked payload of the control frame being read.
    private var control: [UInt8] = []

    /// A decoder refusing messages (all fragments together) over `maxMessageBytes` bytes.
    init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Whether a close frame or a failure ended the reading.
    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// Reads `bytes`, handing each message and control frame to `handle` as it completes.
    /// - Throws: the failure that ends the connection; nothing is read after it.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ handle: (Event) -> Void) throws(Failure) {
        do {
            var offset = 0
            while offset < bytes.count {
                switch state {
                case .done:
                    return
                case .header:
                    offset += try readHeader(from: UnsafeRawBufferPointer(rebasing: bytes[offset...]), handle)
                case .payload(let header, let received):
                    let take = min(header.length - received, bytes.count - offset)
                    let chunk = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + take])
                    if header.opcode.isControl {
                        Self.unmask(chunk, with: header.mask, from: received, appendingTo: &control)
                    } else {
                        Self.unmask(chunk, with: header.mask, from: received, appendingTo: &message)
                    }
                    offset += take
                    if received + take == header.length {
                        try complete(header, handle)
                    } else {
                        state = .payload(header, received: received + take)
                    }
                }
            }
        } catch {
            state = .done
            message = []
            control = []
            throw error
        }
    }

    /// Reads a header from the front of `bytes` (gathering it in `partialHeader` when it
    /// comes apart); returns the bytes it took.
    private mutating func readHeader(from bytes: UnsafeRawBufferPointer, _ handle: (Event) -> Void) throws(Failure) -> Int {
        if partialHeader.isEmpty, bytes.count >= 2 {
            let length = try Self.headerLength(bytes[0], bytes[1])
            if bytes.count >= length {
                try begin(Self.header(UnsafeRawBufferPointer(rebasing: bytes[..<length])), handle)
                return length
            }
        }
        var taken = 0
        while taken < bytes.count {
            partialHeader.append(bytes[taken])
            taken += 1
            guard partialHeader.count >= 2 else { continue }
            if try partialHeader.count == Self.headerLength(partialHeader[0], partialHeader[1]) {
                let header = partialHeader.withUnsafeBytes { Self.header($0) }
                partialHeader = []
                try begin(header, handle)
                return taken
            }
        }
        return taken
    }

    /// A header's length from its first two bytes, checking what they say.
    private static func headerLength(_ first: UInt8, _ second: UInt8) throws(Failure) -> Int {
        guard first & 0x70 == 0 else { throw protocolError("a reserved bit is set and no extension was agreed") }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            throw protocolError("opcode \(first & 0x0F) is reserved")
        }
        guard second & 0x80 != 0 else { throw protocolError("a client's frame must be masked") }
        let length = second & 0x7F
        if opcode.isControl {
            guard first & 0x80 != 0 else { throw protocolError("a control frame was fragmented") }
            guard length <= 125 else { throw protocolError("a control frame carried more than 125 bytes") }
        }
        return 2 + (length == 126 ? 2 : length == 127 ? 8 : 0) + 4
    }

    /// A whole header's fields (its first two bytes checked already).
    private static func header(_ bytes: UnsafeRawBufferPointer) -> Header {
        var length = UInt64(bytes[1] & 0x7F)
        let extended = bytes.count - 6
        if extended > 0 {
            length = bytes[2..<2 + extended].reduce(0) { $0 << 8 | UInt64($1) }
        }
        let mask = bytes[(bytes.count - 4)...].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Header(
            final: bytes[0] & 0x80 != 0, opcode: WebSocketOpcode(rawValue: bytes[0] & 0x0F)!,
            length: Int(clamping: length), mask: mask)
    }

    /// A header is read: checks it against the message in progress and the limit.
    private mutating func begin(_ header: Header, _ handle: (Event) -> Void) throws(Failure) {
        switch header.opcode {
        case .continuation:
            guard messageOpcode != nil else { throw Self.protocolError("a continuation frame came with no message to continue") }
        case .text, .binary:
            guard messageOpcode == nil else { throw Self.protocolError("a new message began before the last one ended") }
            messageOpcode = header.opcode
        case .close, .ping, .pong:
            break
        }
        if !header.opcode.isControl {
            guard header.length <= maxMessageBytes - message.count else {
                throw Failure(code: .messageTooBig, reason: "a message exceeded \(maxMessageBytes) bytes")
            }
            message.reserveCapacity(message.count + header.length)
        }
        if header.length == 0 {
            try complete(header, handle)
        } else {
            state = .payload(header, received: 0)
        }
    }

    /// A frame's payload is whole.
    private mutating func complete(_ header: Header, _ handle: (Event) -> Void) throws(Failure) {
        state = .header
        switch header.opcode {
        case .ping:
            handle(.ping(control))
        case .pong:
            handle(.pong)
        case .close:
            state = .done
            let (code, reason) = try Self.closePayload(control)
            handle(.close(code, reason: reason))
        case .continuation, .text, .binary:
            guard header.final, let opcode = messageOpcode else { return }
            let payload = message
            message = []
            messageOpcode = nil
            if opcode == .binary { return handle(.message(.binary(payload))) }
            guard let text = String(validating: payload, as: UTF8.self) else {
                throw Failure(code: .invalidPayload, reason: "a text message was not valid UTF-8")
            }
            handle(.message(.text(text)))
        }
        control = []
    }

    /// A close frame's code and reason (§5.5.1, §7.4).
    private static func closePayload(_ payload: [UInt8]) throws(Failure) -> (WebSocketCloseCode?, String) {
        guard !payload.isEmpty else { return (nil, "") }
        guard payload.count >= 2 else { throw protocolError("a close frame's code is two bytes") }
        let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.maySend else { throw protocolError("close code \(code) may not be sent") }
        guard let reason = String(validating: payload[2...], as: UTF8.self) else {
            throw Failure(code: .invalidPayload, reason: "a close reason was not valid UTF-8")
        }
        return (code, reason)
    }

    private static func protocolError(_ reason: String) -> Failure {
        Failure(code: .protocolError, reason: reason)
    }

    /// Appends `chunk` unmasked, its first byte at `offset` in the frame's payload.
    private static func unmask(
        _ chunk: UnsafeRawBufferPointer, with mask: UInt32, from offset: Int, appendingTo target: inout [UInt8]
    ) {
        let start = target.count
        target.append(contentsOf: chunk)
        target.withUnsafeMutableBufferPointer { bytes in
            for index in start..<bytes.count {
                bytes[index] ^= UInt8(truncatingIfNeeded: mask >> (UInt32((offset + index - start) & 3) * 8))
            }
        }
    }
}

/// A server's frames (RFC 6455 §5.2): final, unmasked.
enum WebSocketFrame {
    /// `payload` framed as one frame of `opcode`.
    static func encode(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) -> [UInt8] {
        let count = payload.count
        var frame: [UInt8] = []
        frame.reserveCapacity(count + (count < 126 ? 2 : count <= 0xFFFF ? 4 : 10))
        frame.append(0x80 | opcode.rawValue)
        if count < 126 {
            frame.append(UInt8(count))
        } else if count <= 0xFFFF {
            frame.append(126)
            frame.append(contentsOf: [UInt8(count >> 8), UInt8(truncatingIfNeeded: count)])
        } else {
            frame.append(127)
            frame.append(contentsOf: (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(count) >> ($0 * 8)) })
        }
        frame.append(contentsOf: payload)
        return frame
    }

    /// A message framed as one frame.
    static func encode(_ message: WebSocketMessage) -> [UInt8] {
        switch message {
        case .text(var text): text.withUTF8 { encode(.text, UnsafeRawBufferPointer($0)) }
        case .binary(let bytes): bytes.withUnsafeBytes { encode(.binary, $0) }
        }
    }

    /// A close frame: `code` and `reason`, cut to the 123 bytes that fit at a character's
    /// end; empty without a code.
    static func close(_ code: WebSocketCloseCode?, reason: String) -> [UInt8] {
        guard let code else { return encode(.close, UnsafeRawBufferPointer(start: nil, count: 0)) }
        var payload = [UInt8(code.rawValue >> 8), UInt8(truncatingIfNeeded: code.rawValue)]
        var reasonBytes = 0
        for character in reason {
            let size = character.utf8.count
            guard reasonBytes + size <= 123 else { break }
            payload.append(contentsOf: character.utf8)
            reasonBytes += size
        }
        return payload.withUnsafeBytes { encode(.close, $0) }
    }
}

extension WebSocketCloseCode {
    /// Whether an endpoint may put this code in a close frame (RFC 6455 §7.4, and the IANA
    /// registry's 1012–1014): 1005, 1006 and 1015 only report what happened locally.
    var maySend: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }
}
