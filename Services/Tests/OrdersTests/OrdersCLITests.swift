import Foundation
import Orders
import PitlaneCore
import ServiceHarness
import TestSupport
import Testing

/// A program writing its output (standard output and error together) to a file, spawned with
/// posix_spawn and reaped with waitpid on dedicated threads. The test reads the file as it
/// grows: the program is external, so waiting for a line polls (with a deadline). No pipe is
/// held open in the test process, where concurrent tests spawning processes through
/// Foundation's `Process` can close descriptors that are not theirs.
final class RunningProgram: @unchecked Sendable {
    let outputPath: String
    private let pid: pid_t

    struct SpawnFailure: Error {
        let errno: Int32
    }

    init(_ executable: String, _ arguments: [String], outputPath: String) throws {
        self.outputPath = outputPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard result == 0 else { throw SpawnFailure(errno: result) }
        self.pid = pid
    }

    /// The lines written so far (a partial last line excluded).
    var lines: [String] {
        guard let text = try? String(contentsOfFile: outputPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// Waits until a line satisfies `predicate`, checking every 20 ms for at most `timeout`.
    func waitForLine(timeout: Duration = .seconds(20), _ predicate: (String) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if lines.contains(where: predicate) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Waits for the exit; returns the exit status (128 + n after signal n).
    func wait() async throws -> Int32 {
        let pid = self.pid
        return try await onDedicatedThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            let signal = status & 0x7F
            return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
        }
    }
}

@Suite("orders CLI", .timeLimit(.minutes(5)))
struct OrdersCLITests {
    @Test("orders watch prints the order live and carries on across a kill -9 and restart of the server")
    func watchAcrossRestart() async throws {
        try await OrdersServer.with { server in try await Self.watchAcrossRestart(server) }
    }

    static func publish(_ words: [String], port: String) async throws -> Int32 {
        try await runProcess(OrdersServer.ordersCLI, ["publish", "pizza"] + words + ["--port", port, "--token", "staff-token"]).status
    }

    static func watchAcrossRestart(_ server: OrdersServer) async throws {
        let cli = OrdersServer.ordersCLI
        let port = String(server.port)
        let created = try await runProcess(cli, ["create", "--id", "pizza", "--eta", "25 min", "--port", port, "--token", "alice-token"])
        #expect(created.status == 0 && created.output.contains("order pizza (customer alice): received, ETA 25 min"))

        let watcher = try RunningProgram(
            cli, ["watch", "pizza", "--count", "4", "--port", port, "--token", "alice-token"],
            outputPath: server.directory.path + "/watch.log")
        let live = try await watcher.waitForLine { $0.contains("live") }
        #expect(live)
        #expect(try await publish(["status", "preparing"], port: port) == 0)
        let first = try await watcher.waitForLine { $0.contains("status: preparing") }
        #expect(first)

        await server.stop(signal: SIGKILL)
        let retrying = try await watcher.waitForLine { $0.contains("retrying") }
        #expect(retrying)
        try await server.restart()
        #expect(try await publish(["eta", "10", "min"], port: port) == 0)
        #expect(try await publish(["courier", "52.52", "13.40"], port: port) == 0)
        #expect(try await publish(["status", "delivered"], port: port) == 0)
        #expect(try await watcher.wait() == 0)
        let seen = watcher.lines
        #expect(seen.last == "orders: idle")
        let updates = seen.filter { $0.hasPrefix("u1") }.map { line in
            line.split(separator: " ", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        }
        #expect(updates == ["status: preparing", "ETA: 10 min", "courier at 52.52, 13.4", "status: delivered"], "\(seen)")
    }
}
