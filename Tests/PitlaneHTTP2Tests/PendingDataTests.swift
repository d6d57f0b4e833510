import PitlaneCore
import Testing

@testable import PitlaneHTTP2

@Suite("PendingData and BodyBytes", .timeLimit(.minutes(1)))
struct PendingDataTests {
    /// Reads everything out in pieces of `size` bytes.
    private func drain(_ pending: inout PendingData, size: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: size)
        while !pending.isEmpty {
            let count = buffer.withUnsafeMutableBytes { pending.read(into: $0) }
            #expect(count > 0 && count <= size)
            out += buffer[..<count]
        }
        return out
    }

    @Test("envelopes and plain bytes read out as the wire has them, in pieces of any size, the prefix split too")
    func piecesOfAnySize() {
        let big = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let chunks = [
            BodyBytes(enveloping: [1, 2, 3], flags: 0),
            BodyBytes(enveloping: [], flags: 0),  // an empty message: its prefix alone
            BodyBytes([9, 8, 7, 6]),
            BodyBytes(enveloping: big, flags: 1),
            BodyBytes(enveloping: [42], flags: 2),
        ]
        var expected: [UInt8] = [0, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 0, 0, 9, 8, 7, 6]
        expected += [1, 0, 1, 0x11, 0x70] + big + [2, 0, 0, 0, 1, 42]
        for size in [1, 2, 3, 5, 6, 7, 16_384, 100_000] {
            var pending = PendingData()
            for chunk in chunks { pending.append(chunk) }
            pending.append(BodyBytes([]))  // nothing: not queued
            #expect(pending.count == expected.count)
            #expect(drain(&pending, size: size) == expected, "pieces of \(size)")
            #expect(pending.count == 0)
        }
    }

    @Test("BodyBytes.joined and append(to:) give the same bytes as a read; a plain body is its own array")
    func joined() {
        let framed = BodyBytes(enveloping: [5, 6], flags: 1)
        #expect(framed.joined == [1, 0, 0, 0, 2, 5, 6])
        var appended: [UInt8] = [0xff]
        framed.append(to: &appended)
        #expect(appended == [0xff, 1, 0, 0, 0, 2, 5, 6])
        #expect(BodyBytes([3, 4]).joined == [3, 4])
        #expect(framed.count == 7 && BodyBytes([]).isEmpty && !BodyBytes(enveloping: [], flags: 0).isEmpty)
    }

    @Test("a compressed envelope carries flag 1 and the compressed payload's length")
    func compressed() throws {
        let message = [UInt8](repeating: 65, count: 1_000)
        let framed = try BodyBytes.enveloping(message, compression: .gzip)
        #expect(framed.envelopeFlags == 1)
        #expect(framed.payload.count < message.count)
        #expect(try MessageCompression.decompress(framed.payload, with: .gzip, limit: 10_000) == message)
        #expect(try BodyBytes.enveloping(message, compression: nil).envelopeFlags == 0)
    }
}
