import Foundation
import Testing

/// Every command-line program answers `--help` and `-h` with its usage on standard output and
/// exit status 0, before it reads anything else. (`protoc-gen-pitlane` is the root package's;
/// its own tests check it.)
@Suite("--help and -h", .timeLimit(.minutes(2)))
struct HelpTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let programs = [
        "swiftkart-server", "swiftkart", "orders-server", "orders", "chat", "swiftkart-load", "orders-load",
        "pitlane-bench-server", "pitlane-bench-client", "pitlane-protobuf-bench", "pitlane-interop-server",
        "pitlane-interop-client", "pitlane-conformance-testee",
    ]

    @Test("prints the usage and exits 0", arguments: programs, ["--help", "-h"])
    func help(program: String, flag: String) throws {
        let process = Process()
        process.executableURL = Self.root.appending(path: ".build/debug/\(program)")
        process.arguments = [flag]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text.hasPrefix("usage:") || text.contains("\nusage:") || text.contains("usage: "), "\(program) \(flag): \(text)")
    }
}
