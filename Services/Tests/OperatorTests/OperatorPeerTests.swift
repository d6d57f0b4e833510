import Foundation
import TestSupport
import Testing

/// Reflection, metrics and health probes on the built servers, judged by grpcio-reflection,
/// Python protobuf's descriptor pool and prometheus_client (Tests/Peers/operator_peer.py).
@Suite("Operators' view: reflection, metrics, probes, tracing", .timeLimit(.minutes(4)))
struct OperatorPeerTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs a peer from Tests/Peers with `--bin` naming the built executables.
    static func runPeer(_ script: String, limit: Duration) async throws -> (status: Int32, output: String) {
        let beside = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent()
        let binaries =
            FileManager.default.isExecutableFile(atPath: beside.appending(path: "swiftkart-server").path)
            ? beside.path : root.appending(path: ".build/debug").path
        return try await runProcess(
            root.appending(path: ".venv/bin/python").path,
            [root.appending(path: "Tests/Peers/\(script)").path, "--bin", binaries], limit: limit)
    }

    @Test("every check of operator_peer.py against swiftkart-server, orders-server and pitlane-interop-server")
    func peers() async throws {
        let (status, output) = try await Self.runPeer("operator_peer.py", limit: .seconds(200))
        #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
    }

    @Test(
        "tracing: an OTLP collector made from opentelemetry-proto receives one trace for a CLI call and the server's handling of it (tracing_peer.py)"
    )
    func tracing() async throws {
        let (status, output) = try await Self.runPeer("tracing_peer.py", limit: .seconds(200))
        #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
    }
}
