import Foundation
import TestSupport
import Testing

/// The network-fault suite (Tests/Peers/fault_checks.py) against the built servers and
/// clients: latency and delayed chunks, resets, blackholes through a proxy, and (as root, with
/// iproute2) a real kernel partition in a network namespace.
@Suite("Network faults", .timeLimit(.minutes(6)))
struct FaultSuiteTests {
    @Test("every fault scenario: calls end as they should, streams resume, servers return to their baseline")
    func faults() async throws {
        let binaries = URL(filePath: try InteropTests.product("orders-server")).deletingLastPathComponent().path
        let (status, output) = try await runProcess(
            InteropTests.repositoryRoot.appending(path: ".venv/bin/python").path,
            [InteropTests.repositoryRoot.appending(path: "Tests/Peers/fault_checks.py").path, "--bin", binaries],
            limit: .seconds(300)
        )
        #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
    }
}
