import Foundation
import TestSupport
import Testing

/// protobuf's conformance protocol, with Python protobuf as the judge: `conformance_peer.py`
/// drives `pitlane-conformance-testee` through the named conformance cases and seeded corpora
/// of `TestAllTypesProto3`/`Proto2` in binary, JSON and text format (text output read by
/// `text_format.Parse`, text input written by `text_format.MessageToString`).
@Suite("Conformance testee against Python protobuf", .timeLimit(.minutes(5)))
struct ConformanceTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("2,000 seeded messages per schema in binary, JSON and text, and every named case, agree with Python protobuf")
    func conformancePeer() async throws {
        let beside = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent()
        let testee =
            FileManager.default.isExecutableFile(atPath: beside.appending(path: "pitlane-conformance-testee").path)
            ? beside : Self.root.appending(path: ".build/debug")
        let peer = Self.root.appending(path: "Tests/Peers/conformance_peer.py").path
        let arguments = [peer, "--testee", testee.appending(path: "pitlane-conformance-testee").path, "--count", "2000"]
        let (status, output) = try await runProcess(Self.root.appending(path: ".venv/bin/python").path, arguments)
        #expect(status == 0, "\(output)")
        #expect(
            output.contains("ok text-corpus-proto2") && output.contains("ok json-extension")
                && output.contains("ok proto2-invalid-utf8"), "\(output)")
    }
}
