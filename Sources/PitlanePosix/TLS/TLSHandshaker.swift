/// Runs a TLS connection's handshake before it is anyone's: ALPN then says which HTTP the
/// client speaks ("h2", or "http/1.1" on a server that serves it), and the connection is
/// handed, its engine established, to that version. A handshake that fails is reported
/// (a transport's `onTLSHandshakeFailure`), its alert sent, and the socket
/// closed; one that does not finish within `timeout` is closed.
///
/// Loop-owned: other threads hold it in a ``LoopBound``.
package final class TLSHandshaker: FileDescriptorHandler {
    package let socket: Socket
    package let loop: EventLoop
    private let engine: TLSEngine
    private let peer: String
    private let timeout: Duration
    private let onFailure: ((String, TLSError) -> Void)?
    private let decided: (TLSHandshaker, TLSEngine) -> Void
    private let onClose: (TLSHandshaker) -> Void
    private var timer: EventLoop.TimerID?
    private var isDone = false
    private var wantsWritable = false

    package init(
        socket: Socket, loop: EventLoop, engine: TLSEngine, peer: String, timeout: Duration,
        onFailure: ((String, TLSError) -> Void)?, decided: @escaping (TLSHandshaker, TLSEngine) -> Void,
        onClose: @escaping (TLSHandshaker) -> Void
    ) {
        self.socket = socket
        self.loop = loop
        self.engine = engine
        self.peer = peer
        self.timeout = timeout
        self.onFailure = onFailure
        self.decided = decided
        self.onClose = onClose
    }

    package func start() throws {
        try loop.register(socket.fileDescriptor, handler: self, readable: true, writable: false)
        timer = loop.scheduleTimer(after: timeout) { [weak self] in self?.close() }
    }

    package func readable() { advance() }
    package func writable() { advance() }
    package func errorOrHangUp() { close() }
    package func drain() { close() }

    /// Moves the handshake on as far as the bytes at hand allow.
    private func advance() {
        do {
            while !isDone {
                switch engine.advanceHandshake() {
                case .completed:
                    guard try engine.writeCiphertext(to: socket) else { return waitForWritable() }
                    return handOver()
                case .needsFlush:
                    guard try engine.writeCiphertext(to: socket) else { return waitForWritable() }
                case .needsCiphertext:
                    guard try engine.writeCiphertext(to: socket) else { return waitForWritable() }
                    switch try engine.readCiphertext(from: socket) {
                    case .received: continue
                    case .wouldBlock: return
                    case .endOfStream: return close()
                    case .bufferFull: return fail(.connectionFailed(reason: "a handshake record larger than the TLS buffer"))
                    }
                case .failed(let error):
                    return fail(error)
                }
            }
        } catch {
            close()
        }
    }

    private func waitForWritable() {
        guard !wantsWritable else { return }
        wantsWritable = true
        do {
            try loop.setInterest(socket.fileDescriptor, readable: true, writable: true)
        } catch {
            close()
        }
    }

    private func fail(_ error: TLSError) {
        if error.isHandshakeFailure { onFailure?(peer, error) }
        _ = try? engine.writeCiphertext(to: socket)  // the alert that says why
        close()
    }

    private func handOver() {
        isDone = true
        if let timer { _ = loop.cancelTimer(timer) }
        loop.deregister(socket.fileDescriptor)
        decided(self, engine)
    }

    package func close() {
        guard !isDone else { return }
        isDone = true
        if let timer { _ = loop.cancelTimer(timer) }
        loop.deregister(socket.fileDescriptor)
        socket.close()
        onClose(self)
    }
}
