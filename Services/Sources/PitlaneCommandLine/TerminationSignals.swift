import Foundation
import Glibc
import PitlaneHTTP2
import Synchronization

/// Calls `handler` when the process gets SIGINT or SIGTERM, instead of dying: a server uses it
/// to shut down gracefully. Keep the returned value, and cancel it, for as long as that should
/// hold.
///
/// The handlers are installed before this returns (`sigaction`), so a signal sent the moment a
/// server says it is listening is not lost, as it could be while a dispatch signal source was
/// still being registered: the signal handler writes the signal's number to a pipe, and a
/// thread of its own reads the pipe and calls `handler`.
public func onTerminationSignals(_ handler: @escaping @Sendable (_ name: String) -> Void) -> TerminationSignals {
    TerminationSignals(handler)
}

/// The write end of the pipe the signal handler writes to; -1 while no handler is installed.
/// Written once, before the handler is installed; the handler only reads it.
nonisolated(unsafe) private var terminationPipeWriteEnd: Int32 = -1

/// SIGINT and SIGTERM handling for as long as it is not cancelled (see ``onTerminationSignals(_:)``).
public final class TerminationSignals: Sendable {
    private static let signals: [(number: Int32, name: String)] = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")]
    private let cancelled = Atomic(false)

    fileprivate init(_ handler: @escaping @Sendable (_ name: String) -> Void) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { fatalError("onTerminationSignals: pipe failed, errno \(errno)") }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        if terminationPipeWriteEnd >= 0 { close(terminationPipeWriteEnd) }
        terminationPipeWriteEnd = writeEnd
        // Inherited blocked, they would never be delivered.
        System.unblockTerminationSignals()
        for (number, _) in Self.signals {
            signal(number) { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(terminationPipeWriteEnd, &byte, 1)
            }
        }
        let thread = Thread { [self] in
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) == 1 {
                guard !self.cancelled.load(ordering: .acquiring) else { continue }
                if let name = Self.signals.first(where: { $0.number == Int32(byte) })?.name { handler(name) }
            }
            close(readEnd)
        }
        thread.name = "termination signals"
        thread.start()
    }

    /// Stops calling the handler: later signals are ignored, as a server that has begun to
    /// drain ignores them.
    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for (number, _) in Self.signals { signal(number, SIG_IGN) }
    }
}
