/// Accepts connections on a listening socket, on one event loop, and hands each to
/// `onAccept`. Accepts that fail for want of resources pause it (see ``AcceptBackoff``):
/// open connections carry on, the loop does not spin, and a descriptor freed by a connection
/// that closes (``descriptorFreed()``) resumes it at once.
///
/// Loop-owned: other threads hold it in a ``LoopBound``.
package final class Acceptor: FileDescriptorHandler {
    package let listener: Socket
    package let loop: EventLoop
    /// The listener's name in log lines.
    private let name: String
    private let onAccept: (Socket) -> Void
    private var backoff = AcceptBackoff()
    private var retryTimer: EventLoop.TimerID?

    package init(listener: Socket, loop: EventLoop, name: String, onAccept: @escaping (Socket) -> Void) {
        self.listener = listener
        self.loop = loop
        self.name = name
        self.onAccept = onAccept
    }

    /// Starts watching the listener; on the loop.
    package func start() throws {
        try loop.register(listener.fileDescriptor, handler: self, readable: true, writable: false)
    }

    package func readable() {
        while listener.isOpen {
            let socket: Socket?
            do {
                socket = try listener.accept()
            } catch {
                return pause(after: error)
            }
            guard let socket else { break }
            if backoff.accepted() {
                logToStandardError("pitlane: accepting connections on \(name) again")
            }
            onAccept(socket)
        }
    }

    /// A connection of the server's closed, freeing a descriptor: a paused acceptor tries
    /// again now; on the loop.
    package func descriptorFreed() {
        guard backoff.shouldRetry() else { return }
        retry()
    }

    private func pause(after error: SocketError) {
        guard case .pause(let pause, let announce) = backoff.acceptFailed() else { return }
        if announce {
            logToStandardError("pitlane: cannot accept connections on \(name) (\(error)); pausing accepts, open connections carry on")
        }
        do {
            try loop.setInterest(listener.fileDescriptor, readable: false, writable: false)
        } catch {
            // Still readable: the loop calls again at once and finds the same failure;
            // the pause then only delays the log, not the spin. Nothing better is left.
            logToStandardError("pitlane: cannot pause accepting on \(name) (\(error))")
        }
        if let retryTimer { _ = loop.cancelTimer(retryTimer) }
        retryTimer = loop.scheduleTimer(after: pause) { [weak self] in
            self?.retryTimer = nil
            self?.retry()
        }
    }

    /// Watches the listener again and accepts what waits.
    private func retry() {
        guard listener.isOpen else { return }
        if let retryTimer { _ = loop.cancelTimer(retryTimer) }
        retryTimer = nil
        do {
            try loop.setInterest(listener.fileDescriptor, readable: true, writable: false)
        } catch {
            logToStandardError("pitlane: cannot resume accepting on \(name) (\(error)); trying again")
            retryTimer = loop.scheduleTimer(after: AcceptBackoff.firstPause) { [weak self] in
                self?.retryTimer = nil
                self?.retry()
            }
            return
        }
        readable()
    }

    package func writable() {}
    package func errorOrHangUp() {}

    /// Stops accepting and closes the listener; on the loop.
    package func close() {
        guard listener.isOpen else { return }
        if let retryTimer { _ = loop.cancelTimer(retryTimer) }
        retryTimer = nil
        loop.deregister(listener.fileDescriptor)
        listener.close()
    }
}
