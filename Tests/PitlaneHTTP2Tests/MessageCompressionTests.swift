import PitlaneCore
import Testing

@testable import PitlaneHTTP2

@Suite("Message compression with zlib", .timeLimit(.minutes(5)))
struct MessageCompressionTests {
    @Test("gzip and deflate round-trip, and compress repetitive data", arguments: [CompressionAlgorithm.gzip, .deflate])
    func roundTrip(_ algorithm: CompressionAlgorithm) throws {
        let message = Array(String(repeating: "Duck Pond Dash, lap 12. ", count: 4000).utf8)
        let compressed = try MessageCompression.compress(message, with: algorithm)
        #expect(compressed.count < message.count / 20)
        // gzip starts with its magic number; the zlib format with a CMF byte for deflate.
        #expect(algorithm == .gzip ? Array(compressed.prefix(2)) == [0x1F, 0x8B] : compressed.first == 0x78)
        #expect(try MessageCompression.decompress(compressed, with: algorithm, limit: message.count) == message)
    }

    @Test("a compression bomb stops at the limit with .resourceExhausted")
    func bomb() throws {
        let bomb = try MessageCompression.compress([UInt8](repeating: 0, count: 64 << 20), with: .gzip)
        #expect(bomb.count < 100_000)
        let error = #expect(throws: RPCError.self) {
            try MessageCompression.decompress(bomb, with: .gzip, limit: 4 << 20)
        }
        #expect(error?.code == .resourceExhausted)
    }

    @Test("bytes that are not compressed data fail with .internal")
    func garbage() throws {
        let error = #expect(throws: RPCError.self) {
            try MessageCompression.decompress([1, 2, 3, 4, 5, 6, 7, 8], with: .deflate, limit: 1 << 20)
        }
        #expect(error?.code == .internal)
    }
}
