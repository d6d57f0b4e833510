import PitlaneHTTP2
import TestSupport
import Testing

/// grpcio's client must end when its cases end. It once did not, one run in thirty or so:
/// at interpreter shutdown a grpcio daemon thread got a streaming call's lock and died holding
/// it, the garbage collector ran that call's `__del__`, which waited for the lock forever, and
/// the TLS test waited with it, its connection established and idle after every case had
/// passed. The peers now leave through `exit_now` (Tests/Peers/peer_checks.py), which does not
/// finalize.
///
/// Each peer run here is bounded by coreutils' `timeout`, so a hang fails the test (status 137)
/// instead of stalling the suite.
extension InteropTests {
    static let exitProbe = repositoryRoot.appending(path: "Tests/Peers/exit_probe.py").path

    /// ``run(_:_:limitSeconds:)``'s status for a program it had to kill.
    static let killedByTimeLimit: Int32 = 128 + 9

    @Test("over TLS: a grpcio client whose leftover call's lock is held at exit ends through exit_now, and hangs through sys.exit")
    func grpcioClientEndsWithCallLockHeld() async throws {
        try await withTLSPitlaneServer { certificates, address in
            let flags =
                [
                    Self.exitProbe, "--protos", Self.protos, "--ca_file", certificates.caPath,
                    "--server_host_override", "localhost",
                ] + Self.peerFlags(address)
            let exitNow = try await Self.run(Self.python, flags + ["--exit", "exit_now"], limitSeconds: 60)
            #expect(exitNow.status == 0, "\(exitNow.output)")
            #expect(exitNow.output.contains("exiting"), "\(exitNow.output)")
            // The control: the same state hangs sys.exit, so the probe still shows what it stands for.
            let sysExit = try await Self.run(Self.python, flags + ["--exit", "sys.exit"], limitSeconds: 10)
            #expect(
                sysExit.status == Self.killedByTimeLimit,
                "sys.exit ended by itself (status \(sysExit.status)): grpcio no longer hangs here; \(sysExit.output)")
        }
    }

    /// The original symptom, by repetition: no run may outlive its time limit. Correctness of
    /// the cases is ``tls()``'s to judge; this only asks that each run ends by itself.
    @Test("over TLS: grpcio's client ends by itself after every case, run after run")
    func grpcioClientEndsRunAfterRun() async throws {
        try await withTLSPitlaneServer { certificates, address in
            for run in 1...12 {
                let client = try await Self.run(
                    Self.python,
                    [
                        Self.peer, "client", "--protos", Self.protos, "--ca_file", certificates.caPath,
                        "--server_host_override", "localhost",
                    ] + Self.peerFlags(address), limitSeconds: 90)
                #expect(client.status != Self.killedByTimeLimit, "run \(run) hung: \(client.output)")
                #expect(client.output.contains("cases: "), "run \(run): \(client.output)")
                if client.status == Self.killedByTimeLimit { return }
            }
        }
    }

    // MARK: Helpers

    /// Runs `body` while an in-process Pitlane interop server serves TLS on 127.0.0.1.
    func withTLSPitlaneServer(
        _ body: (TestCertificates, HTTP2ServerTransport.Address) async throws -> Void
    ) async throws {
        try await withTestCertificates { certificates in
            let security = HTTP2ServerTransport.Security.tls(
                .init(
                    certificateChainPath: certificates.serverCertificatePath, privateKeyPath: certificates.serverKeyPath
                ))
            try await withPitlaneServer(.tcp, security: security) { address in try await body(certificates, address) }
        }
    }

    /// Runs a program under coreutils' `timeout`, which kills it after `limitSeconds` and then
    /// exits with ``killedByTimeLimit``. SIGKILL, because a child of the test process may have
    /// SIGTERM blocked; `--foreground`, so that only the program is killed, not `timeout` with it.
    static func run(_ executable: String, _ arguments: [String], limitSeconds: Int) async throws -> (status: Int32, output: String) {
        try await runProcess("/usr/bin/timeout", ["--foreground", "--signal=KILL", String(limitSeconds), executable] + arguments)
    }
}
