import PitlaneCore
import Testing

@testable import PitlaneHTTP2

@Suite("MessageDeframer", .timeLimit(.minutes(1)))
struct MessageDeframerTests {
    private func enveloped(_ body: [UInt8], flags: UInt8 = 0) -> [UInt8] {
        let length = body.count
        return [flags, UInt8(length >> 24 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)] + body
    }

    @Test("messages split across appends and several in one come out whole, in order; nothing is held after them")
    func splitsAndJoins() throws {
        var deframer = MessageDeframer(maxMessageBytes: 1 << 20)
        let first = [UInt8](repeating: 7, count: 60_000)
        let wire = enveloped(first) + enveloped([1, 2, 3], flags: 1) + enveloped([])
        var received: [(flags: UInt8, bytes: [UInt8])] = []
        // Odd-sized pieces: prefixes and bodies split everywhere.
        var offset = 0
        while offset < wire.count {
            let end = min(wire.count, offset + 997)
            wire[offset..<end].withUnsafeBytes { deframer.append($0) }
            while let message = try deframer.next() { received.append(message) }
            offset = end
        }
        #expect(received.map(\.bytes) == [first, [1, 2, 3], []])
        #expect(received.map(\.flags) == [0, 1, 0])
        // A stream waiting for its next message keeps no buffer (not even the 60 KB one).
        #expect(deframer.bufferedBytes == 0 && deframer.buffer.capacity == 0)
    }

    @Test("a length prefix over the limit fails before its body is buffered; unknown flags fail")
    func rejects() {
        var deframer = MessageDeframer(maxMessageBytes: 10)
        enveloped([UInt8](repeating: 0, count: 11)).prefix(5).withUnsafeBytes { deframer.append($0) }
        #expect(throws: RPCError.self) { try deframer.next() }
        var flagged = MessageDeframer(maxMessageBytes: 10)
        enveloped([1], flags: 0x80).withUnsafeBytes { flagged.append($0) }
        #expect(throws: RPCError.self) { try flagged.next() }
    }
}
