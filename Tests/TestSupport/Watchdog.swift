import Foundation

/// Kills a child process that outlives its time limit, so a peer that hangs fails its test
/// (with what it printed so far) instead of holding the whole suite.
/// `@unchecked Sendable`: its one property is a `DispatchWorkItem`, whose `cancel()` is thread-safe.
public final class Watchdog: @unchecked Sendable {
    private let item: DispatchWorkItem

    /// Sends SIGTERM to `process` after `limit`, and SIGKILL five seconds later if it is
    /// still running; ``disarm()`` once the process is done with.
    public init(_ process: Process, limit: Duration, what: String) {
        let pid = process.processIdentifier
        item = DispatchWorkItem {
            guard kill(pid, 0) == 0 else { return }
            FileHandle.standardError.write(Data("watchdog: \(what) still running after \(limit); killing it\n".utf8))
            kill(pid, SIGTERM)
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { kill(pid, SIGKILL) }
        }
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: item)
    }

    public func disarm() { item.cancel() }
}

/// How long a peer process run to its end may take before the watchdog ends it.
public let peerTimeLimit: Duration = .seconds(240)
