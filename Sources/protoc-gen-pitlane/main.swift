// protoc-gen-pitlane: protoc's plugin protocol on stdin and stdout, around PitlaneCodeGen.
import PitlaneCodeGen

#if canImport(Glibc)
import Glibc
#endif

if CommandLine.arguments.dropFirst().contains(where: { $0 == "--help" || $0 == "-h" }) {
    print(
        """
        usage: protoc --plugin=protoc-gen-pitlane --pitlane_out=DIR [--pitlane_opt=OPTION,...] FILE.proto ...
        protoc's plugin for Pitlane: reads a CodeGeneratorRequest on standard input and writes the
        Swift messages and service stubs as a CodeGeneratorResponse on standard output. In a
        package, the PitlaneGenerator build plugin runs it (see pitlane-generator-config.json).
        """)
    exit(0)
}

/// Reads all of standard input.
func readStandardInput() -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = read(0, &chunk, chunk.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        bytes.append(contentsOf: chunk[0..<count])
    }
    return bytes
}

func writeStandardOutput(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { exit(1) }
        offset += written
    }
}

do {
    writeStandardOutput(try CodeGenerator.respond(to: readStandardInput()))
} catch {
    var message = "protoc-gen-pitlane: cannot read the request from protoc: \(error)\n"
    message.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    exit(1)
}
