import AllocationCounter
import Foundation
import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// Heap allocations per unary RPC, counted, not timed: 1,000 calls from a Pitlane client to a
/// Pitlane server in this process over 127.0.0.1, client and server together. The bound sits
/// just above today's figure, so a change that adds allocations to the call path fails here
/// (the figure is printed; `make bench` counts the server alone, beside gRPC C++).
@Suite("Allocations per unary RPC", .timeLimit(.minutes(3)))
struct AllocationTests {
    /// Runs ``AllocationProbe`` in a process of its own (this test binary, filtered to it), so
    /// that its process-wide count sees its own calls only, not those of the suites `swift test`
    /// runs beside it.
    @Test("1,000 unary calls, client and server in one process, allocate at most `bound` times each")
    func unaryAllocations() throws {
        let process = Process()
        process.executableURL = URL(filePath: CommandLine.arguments[0])
        process.arguments = ["--testing-library", "swift-testing", "--filter", "AllocationProbe"]
        process.environment = ProcessInfo.processInfo.environment.merging([AllocationProbe.variable: "1"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("AllocationTests:") }, "the probe printed: \(text)")
        print(line)
        let allocations = try #require(line.split(separator: " ").dropFirst().first.flatMap { Double($0) })
        let perCall = allocations / Double(AllocationProbe.calls)
        #expect(perCall <= Double(Self.bound), "\(perCall) allocations per unary call; the bound is \(Self.bound)")
    }

    /// Client and server together, per call, in the debug build `make test` runs: 345 on
    /// 2026-12-02, 308 on 2026-12-03 after the server's unary path and header handling were
    /// reworked, 311-312 later that day (a client call now runs on its connection's loop; a
    /// queue that holds one element at a time allocates nothing) (release builds allocate
    /// less; `make bench` counts the server alone); 302-303 later still (the server's
    /// executor compiled for the service's types, its response writer one value); 300 after
    /// that (a message's envelope is no longer a copy of it, both ways); 288 after the
    /// client's response messages were read through one closure, not four iterator levels;
    /// 285 on 2026-12-04 (a request sequence's source one enum, the decoder capturing only
    /// the deserializer); 246 on 2026-12-05 (a Swift job queued on a loop as it is, not in a
    /// closure; a loop runs the tasks its tasks queue in the same iteration); 248 after a request's
    /// path was parsed in its string's bytes (a debug build's generic `String(decoding:as:)`
    /// allocates once more per part; release builds allocate as before); 248 on 2026-12-07
    /// (one HTTP/2 connection driver for both sides). Counted in a process of its own since
    /// then, so `swift test`, which runs every suite at once, counts the same.
    static let bound = 249
}

/// Set in the environment of the process ``AllocationTests`` starts for the probe.
private let allocationProbeVariable = "PITLANE_ALLOCATION_PROBE"

/// The counting itself, run only in the process ``AllocationTests`` starts for it.
@Suite(
    "Allocation probe", .enabled(if: ProcessInfo.processInfo.environment[allocationProbeVariable] != nil),
    .timeLimit(.minutes(2)))
struct AllocationProbe {
    static let variable = allocationProbeVariable
    static let calls = 1_000

    @Test("counts the allocations of 1,000 unary calls")
    func count() async throws {
        let server = GRPCServer(transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Served outside Swift Testing's task-local values, as a server's main serves: an RPC's
            // task copies the task-locals bound where the server was started (one allocation each).
            group.addTask { try await Task.detached { try await server.serve() }.value }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                let request = EchoRequest.with { $0.text = "pit stop" }
                // Warm up: the connection, its buffers and every cache a call touches.
                for _ in 0..<200 { _ = try await echo.get(request) }
                let calls = Self.calls
                pitlane_allocations_start()
                for _ in 0..<calls { _ = try await echo.get(request) }
                let allocations = Int(pitlane_allocations_stop())
                let perCall = Double(allocations) / Double(calls)
                print(
                    "AllocationTests: \(allocations) allocations in \(calls) unary calls, \(perCall) per call (bound \(AllocationTests.bound))"
                )
            }
        }
    }
}
