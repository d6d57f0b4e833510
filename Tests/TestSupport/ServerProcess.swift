import Foundation

/// A server executable run for the length of a test: started, its port read from the first
/// line it prints ("listening on ipv4:127.0.0.1:PORT", or "listening PORT"), stopped with a signal. Blocking pipe
/// work runs on dedicated threads; the server's standard error goes to a file for messages.
public final class ServerProcess: @unchecked Sendable {
    public let port: Int
    private let process: Process

    /// The server's process id.
    public var processIdentifier: Int32 { process.processIdentifier }
    private let errorLog: URL

    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    private init(process: Process, port: Int, errorLog: URL) {
        self.process = process
        self.port = port
        self.errorLog = errorLog
    }

    /// A test that ended without stopping its server (it failed, or hit its time limit)
    /// leaves no process behind.
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public static func start(_ executable: String, _ arguments: [String]) async throws -> ServerProcess {
        try await onDedicatedThread {
            let process = Process()
            process.executableURL = URL(filePath: executable)
            process.arguments = arguments
            let output = Pipe()
            let errorLog = FileManager.default.temporaryDirectory.appending(path: "server-\(UUID().uuidString).log")
            _ = FileManager.default.createFile(atPath: errorLog.path, contents: nil)
            process.standardOutput = output
            process.standardError = try FileHandle(forWritingTo: errorLog)
            process.standardInput = FileHandle.nullDevice
            try process.run()
            // A server that never says it is listening is killed, which ends the read below.
            let watchdog = Watchdog(process, limit: .seconds(60), what: "\(executable) starting")
            defer { watchdog.disarm() }
            var line: [UInt8] = []
            while true {
                guard let character = output.fileHandleForReading.readData(ofLength: 1).first else {
                    let log = (try? String(contentsOf: errorLog, encoding: .utf8)) ?? ""
                    throw StartFailure(description: "\(executable) exited before listening: \(log)")
                }
                if character == UInt8(ascii: "\n") { break }
                line.append(character)
            }
            let text = String(decoding: line, as: UTF8.self)
            guard text.hasPrefix("listening") else {
                process.terminate()
                throw StartFailure(description: "unexpected first line from \(executable): \(text)")
            }
            // 0 for an address without a port (a Unix socket).
            let port = text.split(whereSeparator: { $0 == ":" || $0 == " " }).last.flatMap { Int($0) } ?? 0
            return ServerProcess(process: process, port: port, errorLog: errorLog)
        }
    }

    /// Sends `signal` (SIGTERM by default) and waits for the exit; returns the exit status and
    /// what the server logged.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) async -> (status: Int32, log: String) {
        let process = self.process
        let errorLog = self.errorLog
        return
            (try? await onDedicatedThread {
                kill(process.processIdentifier, signal)
                let watchdog = Watchdog(process, limit: .seconds(30), what: "a server stopping")
                defer { watchdog.disarm() }
                process.waitUntilExit()
                let log = (try? String(contentsOf: errorLog, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(at: errorLog)
                return (process.terminationStatus, log)
            }) ?? (-1, "")
    }
}
