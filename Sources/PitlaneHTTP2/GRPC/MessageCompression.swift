import CZlib
import PitlaneCore

/// gRPC message compression with zlib: `gzip` (RFC 1952) and `deflate` (the zlib format,
/// RFC 1950, as gRPC implementations use the name).
package enum MessageCompression {
    /// The `grpc-accept-encoding` value Pitlane sends.
    package static let acceptEncoding = "identity,deflate,gzip"

    /// zlib's window bits: 15 for the zlib format, plus 16 for a gzip wrapper.
    private static func windowBits(_ algorithm: CompressionAlgorithm) -> Int32 {
        algorithm == .gzip ? 15 + 16 : 15
    }

    package static func compress(_ bytes: [UInt8], with algorithm: CompressionAlgorithm) throws -> [UInt8] {
        var stream = z_stream()
        let initialized = deflateInit2_(
            &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, windowBits(algorithm), 8, Z_DEFAULT_STRATEGY,
            zlibVersion(), Int32(MemoryLayout<z_stream>.size)
        )
        guard initialized == Z_OK else { throw RPCError(code: .internal, message: "zlib deflateInit failed (\(initialized))") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))))
        let result: Int32 = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard result == Z_STREAM_END else { throw RPCError(code: .internal, message: "zlib deflate failed (\(result))") }
        output.removeLast(output.count - Int(stream.total_out))
        return output
    }

    /// Decompresses one message; more than `limit` bytes of output fails with
    /// `.resourceExhausted` before it is all produced, so a small bomb stays small.
    package static func decompress(_ bytes: [UInt8], with algorithm: CompressionAlgorithm, limit: Int) throws -> [UInt8] {
        var stream = z_stream()
        let initialized = inflateInit2_(&stream, windowBits(algorithm), zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard initialized == Z_OK else { throw RPCError(code: .internal, message: "zlib inflateInit failed (\(initialized))") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        try bytes.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            while true {
                let (result, produced) = chunk.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    let result = inflate(&stream, Z_NO_FLUSH)
                    return (result, out.count - Int(stream.avail_out))
                }
                guard output.count + produced <= limit else {
                    throw RPCError(code: .resourceExhausted, message: "a decompressed message exceeds the limit of \(limit) bytes")
                }
                output.append(contentsOf: chunk[0..<produced])
                if result == Z_STREAM_END { return }
                guard result == Z_OK, produced > 0 || stream.avail_in > 0 else {
                    throw RPCError(code: .internal, message: "the message is not valid \(algorithm) data (zlib \(result))")
                }
            }
        }
        return output
    }
}
