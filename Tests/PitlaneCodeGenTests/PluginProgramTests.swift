import Foundation
import Testing

/// `protoc-gen-pitlane`, the program protoc runs: like every Pitlane program it answers `--help`
/// and `-h` with its usage and exit status 0. (The services package checks its own programs.)
@Suite("protoc-gen-pitlane", .timeLimit(.minutes(1)))
struct PluginProgramTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("prints the usage and exits 0", arguments: ["--help", "-h"])
    func help(flag: String) throws {
        let process = Process()
        process.executableURL = Self.root.appending(path: ".build/debug/protoc-gen-pitlane")
        process.arguments = [flag]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text.contains("usage: "), "protoc-gen-pitlane \(flag): \(text)")
    }
}
