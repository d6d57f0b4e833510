import Foundation
import TestSupport
import Testing

/// Reflection, metrics and health probes on the built servers, judged by grpcio-reflection,
/// Python protobuf's descriptor pool and prometheus_client (Tests/Peers/operator_peer.py).
@Suite("Operators' view: reflection, metrics, probes", .timeLimit(.minutes(4)))
struct OperatorPeerTests {
    @Test("every check of operator_peer.py against swiftkart-server, orders-server and pitlane-interop-server")
    func peers() async throws {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let beside = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent()
        let binaries = FileManager.default.isExecutableFile(atPath: beside.appending(path: "swiftkart-server").path)
            ? beside.path : root.appending(path: ".build/debug").path
        let (status, output) = try await runProcess(
            root.appending(path: ".venv/bin/python").path,
            [root.appending(path: "Tests/Peers/operator_peer.py").path, "--bin", binaries], limit: .seconds(200))
        #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
    }
}
