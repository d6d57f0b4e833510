import Dispatch
import Glibc

/// Calls `handler` when the process gets SIGINT or SIGTERM, instead of dying: a server uses it
/// to shut down gracefully. Keep the returned sources alive for as long as that should hold.
public func onTerminationSignals(_ handler: @escaping @Sendable (_ name: String) -> Void) -> [any DispatchSourceSignal] {
    // A process started from a thread that blocks these (a test runner's thread pool, say)
    // inherits the mask; unblock them, or the sources below never fire.
    var unblock = sigset_t()
    sigemptyset(&unblock)
    sigaddset(&unblock, SIGINT)
    sigaddset(&unblock, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    return [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")].map { number, name in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { handler(name) }
        source.resume()
        return source
    }
}
