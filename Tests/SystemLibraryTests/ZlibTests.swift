import CZlib
import Testing

@Suite("zlib through CZlib", .timeLimit(.minutes(5)))
struct ZlibTests {
    @Test("1 MiB round-trips through deflate and inflate")
    func roundTripOneMebibyte() throws {
        // Compressible but not trivial: a repeating text with a counter mixed in.
        var generator = SystemRandomNumberGenerator()
        let original: [UInt8] = (0..<(1 << 20)).map { index in
            index % 97 == 0 ? UInt8.random(in: 0...255, using: &generator) : UInt8(ascii: "a") + UInt8(index % 26)
        }

        var compressedLength = compressBound(uLong(original.count))
        var compressed = [UInt8](repeating: 0, count: Int(compressedLength))
        #expect(compress2(&compressed, &compressedLength, original, uLong(original.count), Z_BEST_SPEED) == Z_OK)
        #expect(compressedLength < uLong(original.count))

        var restoredLength = uLong(original.count)
        var restored = [UInt8](repeating: 0, count: original.count)
        #expect(uncompress(&restored, &restoredLength, compressed, compressedLength) == Z_OK)
        #expect(restoredLength == uLong(original.count))
        #expect(restored == original)
    }
}
