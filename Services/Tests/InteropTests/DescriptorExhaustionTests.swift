import Foundation
import PitlaneCore
import PitlaneHTTP2
import PitlaneInterop
import TestSupport
import Testing

/// A server out of file descriptors (here `ulimit -n 40` and 60 connections opened at it)
/// stays responsive to its open connections, pauses accepting instead of spinning on the
/// readable listener, says so, and accepts again once descriptors free up.
@Suite("A server out of file descriptors", .timeLimit(.minutes(2)))
struct DescriptorExhaustionTests {
    @Test("accept fails with EMFILE: open connections are served, the server does not spin, and it recovers")
    func descriptorExhaustion() async throws {
        let executable = try InteropTests.product("pitlane-interop-server")
        // A short preface timeout would free the hoarded descriptors by itself; the default is 10 s.
        let server = try await ServerProcess.start("/bin/sh", ["-c", "ulimit -n 40 && exec '\(executable)' --port=0"])
        let target = HTTP2ClientTransport.Target.ipv4(host: "127.0.0.1", port: server.port)

        try await withGRPCClient(transport: try HTTP2ClientTransport(target: target)) { client in
            let service = Grpc_Testing_TestService.Client(wrapping: client)
            _ = try await service.emptyCall(Empty())

            // More connections than the server has descriptors for; the kernel completes their
            // handshakes, the server accepts until EMFILE.
            var hoard: [Socket] = []
            for _ in 0..<60 {
                let socket = try Socket(for: try .ipv4("127.0.0.1", port: server.port))
                _ = try? socket.connect(to: try .ipv4("127.0.0.1", port: server.port))
                hoard.append(socket)
            }
            let before = try cpuSeconds(of: server.processIdentifier)
            try await Task.sleep(for: .seconds(2))
            let spent = try cpuSeconds(of: server.processIdentifier) - before
            // A server spinning on its listener burns its core the whole time.
            #expect(spent < 0.5, "the server used \(spent) s of CPU in 2 s while out of descriptors")
            // The connection it already had is served all along.
            _ = try await service.emptyCall(Empty())

            for socket in hoard { socket.close() }
        }
        // Once descriptors free up, new connections are accepted again.
        try await eventually("a new connection is served") {
            (try? await withGRPCClient(transport: try HTTP2ClientTransport(target: target)) { client in
                _ = try await Grpc_Testing_TestService.Client(wrapping: client).emptyCall(
                    Empty(), options: .defaults.with { $0.timeout = .seconds(5) })
                return true
            }) ?? false
        }
        let (_, log) = await server.stop()
        #expect(log.contains("pausing accepts") && log.contains("accepting connections on"), "\(log)")
    }

    /// User plus system CPU time of process `pid`, from /proc.
    func cpuSeconds(of pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // "pid (name) state ppid …": utime and stime are fields 14 and 15, counted after the name.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = Double(fields[11])! + Double(fields[12])!
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
