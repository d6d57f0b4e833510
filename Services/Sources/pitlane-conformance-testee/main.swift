import PitlaneProtobuf

#if canImport(Glibc)
import Glibc
#endif

// The testee side of Google's conformance protocol: on stdin a 4-byte little-endian length
// and a ConformanceRequest, on stdout the same framing around a ConformanceResponse, until
// stdin ends. Run by `conformance_test_runner` (protobuf's C++ runner) or
// Tests/Peers/conformance_peer.py.

if CommandLine.arguments.dropFirst().contains(where: { $0 == "--help" || $0 == "-h" }) {
    print(
        """
        usage: pitlane-conformance-testee
        Speaks Google's protobuf conformance protocol on standard input and output (each request and
        response a 4-byte little-endian length, then the message) until standard input ends; run by
        conformance_test_runner.
        """)
    exit(0)
}

/// Reads exactly `count` bytes from stdin; nil at a clean end of input before the first.
func readExactly(_ count: Int) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
        let got = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress! + filled, count - filled) }
        if got < 0, errno == EINTR { continue }
        guard got > 0 else {
            if filled == 0 { return nil }
            fatalError("stdin ended inside a request (\(filled) of \(count) bytes)")
        }
        filled += got
    }
    return buffer
}

func writeAll(_ bytes: [UInt8]) {
    var written = 0
    while written < bytes.count {
        let wrote = bytes.withUnsafeBytes { write(1, $0.baseAddress! + written, bytes.count - written) }
        if wrote < 0, errno == EINTR { continue }
        precondition(wrote > 0, "stdout closed")
        written += wrote
    }
}

while let prefix = readExactly(4) {
    let length = prefix.reversed().reduce(0) { $0 << 8 | Int($1) }
    let payload = length == 0 ? [] : readExactly(length) ?? []
    let response: Conformance_ConformanceResponse
    do {
        response = ConformanceTestee.respond(to: try Conformance_ConformanceRequest(serializedBytes: payload))
    } catch {
        response = .with { $0.runtimeError = "cannot read the ConformanceRequest: \(error)" }
    }
    let bytes = (try? response.serializedBytes()) ?? []
    writeAll(withUnsafeBytes(of: UInt32(bytes.count).littleEndian, Array.init) + bytes)
}
