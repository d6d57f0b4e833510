import Foundation
import TestSupport
import Testing

/// Nothing a finished RPC armed outlives it: 100,000 unary calls that each carry a two-minute
/// `grpc-timeout` (as gRPC C++ clients send on every call) leave the server's memory where
/// 1,000 left it. h2load drives the load; the server is `pitlane-bench-server`.
@Suite("Memory after deadline-carrying calls", .timeLimit(.minutes(3)))
struct DeadlineMemoryTests {
    @Test("server RSS after 100,000 calls with grpc-timeout 120S is what it is after 1,000")
    func deadlinesFreeTheirMemory() async throws {
        let server = try await ServerProcess.start(try InteropTests.product("pitlane-bench-server"), ["--port", "0"])
        let directory = try TemporaryDirectory()
        // bench.v1.Payload with a 16-byte body, length-prefixed.
        let body = directory.path + "/body"
        _ = FileManager.default.createFile(atPath: body, contents: Data([0, 0, 0, 0, 0x12, 0x0a, 0x10] + Array("PitlanePitlane!!".utf8)))

        func load(_ requests: Int) async throws {
            let (status, output) = try await runProcess(
                "/usr/bin/h2load",
                [
                    "-n", String(requests), "-c", "4", "-m", "32",
                    "-H", "content-type: application/grpc", "-H", "te: trailers", "-H", "grpc-timeout: 120S",
                    "-d", body, "http://127.0.0.1:\(server.port)/bench.v1.Bench/Unary",
                ])
            #expect(status == 0 && output.contains("\(requests) succeeded"), "\(output)")
        }
        try await load(1_000)
        let afterThousand = try residentBytes(of: server.processIdentifier)
        try await load(100_000)
        let afterHundredThousand = try residentBytes(of: server.processIdentifier)
        await server.stop()
        // Held until its deadline, each call's leftovers (~800 bytes each before) would add ~80 MB.
        let growth = afterHundredThousand - afterThousand
        #expect(growth < 8 << 20, "RSS grew by \(growth >> 10) KiB: from \(afterThousand >> 10) to \(afterHundredThousand >> 10) KiB")
    }

    @Test("server RSS after 50,000 Connect calls over HTTP/1.1 and 50,000 gRPC-Web calls over HTTP/2 is what it is after 1,000")
    func webProtocolsFreeTheirMemory() async throws {
        let server = try await ServerProcess.start(try InteropTests.product("pitlane-bench-server"), ["--port", "0"])
        let directory = try TemporaryDirectory()
        let bare = directory.path + "/bare"
        let framed = directory.path + "/framed"
        _ = FileManager.default.createFile(atPath: bare, contents: Data([0x0a, 0x10] + Array("PitlanePitlane!!".utf8)))
        _ = FileManager.default.createFile(atPath: framed, contents: Data([0, 0, 0, 0, 0x12, 0x0a, 0x10] + Array("PitlanePitlane!!".utf8)))

        func load(_ requests: Int) async throws {
            for (contentType, body, extra) in [
                ("application/proto", bare, ["--h1", "-m", "1"]), ("application/grpc-web+proto", framed, ["-m", "32"]),
            ] {
                let (status, output) = try await runProcess(
                    "/usr/bin/h2load",
                    [
                        "-n", String(requests), "-c", "4", "-H", "content-type: \(contentType)", "-H", "connect-timeout-ms: 120000",
                        "-d", body, "http://127.0.0.1:\(server.port)/bench.v1.Bench/Unary",
                    ] + extra)
                #expect(status == 0 && output.contains("\(requests) succeeded"), "\(contentType): \(output)")
            }
        }
        try await load(1_000)
        let afterThousand = try residentBytes(of: server.processIdentifier)
        try await load(50_000)
        let afterFifty = try residentBytes(of: server.processIdentifier)
        await server.stop()
        let growth = afterFifty - afterThousand
        #expect(growth < 8 << 20, "RSS grew by \(growth >> 10) KiB: from \(afterThousand >> 10) to \(afterFifty >> 10) KiB")
    }

    /// VmRSS of process `pid`, in bytes.
    func residentBytes(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kilobytes = try #require(Int(line.split(separator: " ")[1]))
        return kilobytes << 10
    }
}
