import Foundation

/// A server process for the length of a test: started, its first line ("listening PORT", or
/// "listening unix:PATH") read, killed by `stop()`. Blocking pipe work runs on dedicated threads.
public final class ListeningProcess: Sendable {
    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    private let process: Process
    /// Held open for the process's life: some servers stop when their standard input closes.
    private let input: Pipe
    /// The port the server printed (0 for a server on a Unix socket).
    public let port: Int

    private init(process: Process, input: Pipe, port: Int) {
        self.process = process
        self.input = input
        self.port = port
    }

    /// Starts `executable` and waits for its "listening …" line.
    public static func start(_ executable: String, _ arguments: [String]) async throws -> ListeningProcess {
        try await onDedicatedThread {
            let process = Process()
            process.executableURL = URL(filePath: executable)
            process.arguments = arguments
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            var line: [UInt8] = []
            while true {
                guard let character = output.fileHandleForReading.readData(ofLength: 1).first else {
                    throw StartFailure(description: "\(executable) exited before it listened")
                }
                if character == UInt8(ascii: "\n") { break }
                line.append(character)
            }
            let text = String(decoding: line, as: UTF8.self)
            let place = text.hasPrefix("listening ") ? text.dropFirst("listening ".count) : ""
            guard let port = place.hasPrefix("unix:") ? 0 : Int(place) else {
                kill(process.processIdentifier, SIGKILL)
                throw StartFailure(description: "unexpected first line from \(executable): \(text)")
            }
            return ListeningProcess(process: process, input: input, port: port)
        }
    }

    /// Kills the process and waits for it to end. SIGKILL, because a child started from a
    /// thread of the concurrency pool inherits its blocked signals, SIGTERM among them.
    public func stop() async {
        let process = self.process
        _ = try? await onDedicatedThread {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// A fresh path for a Unix socket in the temporary directory; the caller removes the file.
public func temporarySocketPath(_ prefix: String) -> String {
    FileManager.default.temporaryDirectory.appending(path: "\(prefix)-\(UInt32.random(in: 0...UInt32.max)).sock").path
}
