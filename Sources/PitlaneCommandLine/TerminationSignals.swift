import Dispatch
import Glibc
import PitlaneHTTP2

/// Calls `handler` when the process gets SIGINT or SIGTERM, instead of dying: a server uses it
/// to shut down gracefully. Keep the returned sources alive for as long as that should hold.
public func onTerminationSignals(_ handler: @escaping @Sendable (_ name: String) -> Void) -> [any DispatchSourceSignal] {
    // Inherited blocked, they would never reach the sources below.
    System.unblockTerminationSignals()
    return [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")].map { number, name in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { handler(name) }
        source.resume()
        return source
    }
}
