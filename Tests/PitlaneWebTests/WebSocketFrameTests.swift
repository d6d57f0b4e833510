import Testing

@testable import PitlaneWeb

/// RFC 6455 framing without sockets: the decoder against frames a client would send (and
/// ones it must not), fed whole and in pieces; the encoder's lengths. Over sockets, Python
/// `websockets`, raw frames and Chromium judge it (Tests/Peers/websocket_peer.py,
/// browser_peer.py).
@Suite("WebSocket frames", .timeLimit(.minutes(1)))
struct WebSocketFrameTests {
    /// A client's frame: masked with `key`, FIN and the first byte's other bits as given.
    static func clientFrame(
        _ opcode: UInt8, _ payload: [UInt8], final: Bool = true, masked: Bool = true, reserved: UInt8 = 0,
        key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
    ) -> [UInt8] {
        var frame: [UInt8] = [(final ? 0x80 : 0) | reserved << 4 | opcode]
        let mask: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: frame.append(mask | UInt8(payload.count))
        case ...0xFFFF: frame += [mask | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: frame += [mask | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        guard masked else { return frame + payload }
        return frame + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    static func text(_ text: String, final: Bool = true) -> [UInt8] { clientFrame(0x1, Array(text.utf8), final: final) }

    /// What `bytes`, fed in pieces of `pieceSize` bytes, decode to, and the failure if any.
    static func decode(
        _ bytes: [UInt8], pieceSize: Int? = nil, limit: Int = 1 << 20
    ) -> (events: [WebSocketFrameDecoder.Event], failure: WebSocketFrameDecoder.Failure?) {
        var decoder = WebSocketFrameDecoder(maxMessageBytes: limit)
        var events: [WebSocketFrameDecoder.Event] = []
        let size = pieceSize ?? max(bytes.count, 1)
        var start = 0
        while start < bytes.count {
            let piece = Array(bytes[start..<min(start + size, bytes.count)])
            let failure = piece.withUnsafeBytes { piece -> WebSocketFrameDecoder.Failure? in
                do throws(WebSocketFrameDecoder.Failure) {
                    try decoder.feed(piece) { events.append($0) }
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { return (events, failure) }
            start += size
        }
        return (events, nil)
    }

    @Test("messages of every length class decode the same whole and a byte at a time")
    func lengths() {
        for count in [0, 1, 125, 126, 127, 65_535, 65_536, 70_000] {
            let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7) }
            let frame = Self.clientFrame(0x2, payload)
            for piece in count < 1000 ? [nil, 1, 3] : [nil, 4093] {
                let (events, failure) = Self.decode(frame + Self.text("after"), pieceSize: piece)
                #expect(failure == nil)
                #expect(events == [.message(.binary(payload)), .message(.text("after"))], "\(count) bytes in pieces of \(piece ?? 0)")
            }
        }
    }

    @Test("fragments join into one message, with control frames between them answered at once")
    func fragments() {
        let bytes =
            Self.text("héllo, ", final: false) + Self.clientFrame(0x9, Array("are you there".utf8))
            + Self.clientFrame(0x0, Array("wör".utf8), final: false) + Self.clientFrame(0xA, [])
            + Self.clientFrame(0x0, Array("ld".utf8))
        for piece in [nil, 1, 2, 5] {
            let (events, failure) = Self.decode(bytes, pieceSize: piece)
            #expect(failure == nil)
            #expect(events == [.ping(Array("are you there".utf8)), .pong, .message(.text("héllo, wörld"))])
        }
    }

    @Test("a UTF-8 sequence split between fragments is fine; an invalid one is 1007")
    func utf8() {
        let euro = Array("€".utf8)
        let split = Self.clientFrame(0x1, [euro[0]], final: false) + Self.clientFrame(0x0, Array(euro[1...]))
        #expect(Self.decode(split).events == [.message(.text("€"))])
        let invalid = Self.clientFrame(0x1, [0x7B, 0xC3, 0x28])
        #expect(Self.decode(invalid).failure?.code == .invalidPayload)
        let badReason = Self.clientFrame(0x8, [0x03, 0xE8, 0xFF, 0xFE])
        #expect(Self.decode(badReason).failure?.code == .invalidPayload)
    }

    @Test("a close frame ends the reading: its code and reason, or none; what follows is not read")
    func close() {
        let bye = Self.clientFrame(0x8, [0x03, 0xE8] + Array("bye".utf8))
        #expect(Self.decode(bye + Self.text("too late")).events == [.close(.normalClosure, reason: "bye")])
        #expect(Self.decode(Self.clientFrame(0x8, []) + [0xFF, 0xFF]).events == [.close(nil, reason: "")])
        #expect(Self.decode(Self.clientFrame(0x8, [0x0B, 0xB8])).events == [.close(WebSocketCloseCode(rawValue: 3000), reason: "")])
    }

    @Test("each broken rule is a failure with its close code, and nothing after it is read")
    func failures() {
        let json = Array(#"{"text":"x"}"#.utf8)
        let cases: [(String, [UInt8], WebSocketCloseCode)] = [
            ("unmasked", Self.clientFrame(0x1, json, masked: false), .protocolError),
            ("RSV1", Self.clientFrame(0x1, json, reserved: 4), .protocolError),
            ("RSV3", Self.clientFrame(0x1, json, reserved: 1), .protocolError),
            ("opcode 3", Self.clientFrame(0x3, [1]), .protocolError),
            ("opcode 11", Self.clientFrame(0xB, []), .protocolError),
            ("a fragmented ping", Self.clientFrame(0x9, [1], final: false), .protocolError),
            ("a ping of 126 bytes", Self.clientFrame(0x9, Array(repeating: 1, count: 126)), .protocolError),
            ("a lone continuation", Self.clientFrame(0x0, json), .protocolError),
            ("a text frame inside a message", Self.text("a", final: false) + Self.text("b"), .protocolError),
            ("a 1-byte close", Self.clientFrame(0x8, [3]), .protocolError),
            ("close 1005", Self.clientFrame(0x8, [0x03, 0xED]), .protocolError),
            ("close 999", Self.clientFrame(0x8, [0x03, 0xE7]), .protocolError),
            ("close 2000", Self.clientFrame(0x8, [0x07, 0xD0]), .protocolError),
            ("one byte over", Self.clientFrame(0x2, Array(repeating: 0, count: 101)), .messageTooBig),
            (
                "over in fragments",
                Self.text(String(repeating: "a", count: 60), final: false) + Self.clientFrame(0x0, Array(repeating: 0x61, count: 41)),
                .messageTooBig
            ),
        ]
        for (name, bytes, code) in cases {
            for piece in [nil, 1] {
                let (events, failure) = Self.decode(bytes + Self.text("after"), pieceSize: piece, limit: 100)
                #expect(failure?.code == code, "\(name)")
                #expect(events.isEmpty, "\(name): \(events)")
            }
        }
        // The limit itself is no failure.
        #expect(Self.decode(Self.clientFrame(0x2, Array(repeating: 0, count: 100)), limit: 100).failure == nil)
    }

    @Test("the server's frames: unmasked, FIN set, the length in 7, 16 or 64 bits; a close reason cut at a character")
    func encoding() {
        for (count, header) in [
            (0, [0x82, 0]), (125, [0x82, 125]), (126, [0x82, 126, 0, 126]), (65_536, [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]),
        ] {
            let frame = WebSocketFrame.encode(.binary(Array(repeating: 9, count: count)))
            #expect(Array(frame.prefix(header.count)) == header.map(UInt8.init))
            #expect(frame.count == header.count + count)
        }
        #expect(WebSocketFrame.close(nil, reason: "ignored") == [0x88, 0])
        let reason = String(repeating: "é", count: 70)  // 140 bytes: 61 characters (122 bytes) fit
        let close = WebSocketFrame.close(.goingAway, reason: reason)
        #expect(close.count == 2 + 2 + 122)
        #expect(Array(close.prefix(4)) == [0x88, 124, 0x03, 0xE9])
    }
}
