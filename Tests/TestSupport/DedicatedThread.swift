import Foundation

/// Runs blocking work (a child process, a pipe read) on a thread of its own, so it never
/// holds one of the few threads Swift concurrency runs tasks on: on a 2-core machine two
/// blocked tests would stall every server and event loop test running beside them.
public func onDedicatedThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

/// Runs a program to its end on a dedicated thread; returns its exit status and everything
/// it printed (standard output and error together). A program still running after
/// `limit` is killed (and its status says so).
public func runProcess(
    _ executable: String, _ arguments: [String],
    limit: Duration = peerTimeLimit
) async throws -> (status: Int32, output: String) {
    try await onDedicatedThread {
        let process = Process()
        process.executableURL = URL(filePath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let watchdog = Watchdog(process, limit: limit, what: "\(executable) \(arguments.joined(separator: " "))")
        defer { watchdog.disarm() }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
