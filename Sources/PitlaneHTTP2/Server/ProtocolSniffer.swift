/// Tells HTTP/2 from HTTP/1.1 on a plaintext connection by its first bytes: HTTP/2 begins
/// with the 24-byte client preface (`PRI * HTTP/2.0…`), which no HTTP/1.1 request line
/// can. The connection is then handed to its kind with the bytes read so far (at most 24).
///
/// Loop-owned: other threads hold it in a ``LoopBound``.
final class ProtocolSniffer: FileDescriptorHandler, ServerConnection {
    enum Verdict {
        case http2
        case http1
    }

    let socket: Socket
    let loop: EventLoop
    private let timeout: Duration
    private let decided: (ProtocolSniffer, Verdict, [UInt8]) -> Void
    private let onClose: (any ServerConnection) -> Void
    private var timer: EventLoop.TimerID?
    private var isDone = false
    /// What the client sent so far.
    private var received: [UInt8] = []

    /// The HTTP/2 client connection preface (RFC 9113 §3.4).
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    init(
        socket: Socket, loop: EventLoop, timeout: Duration,
        decided: @escaping (ProtocolSniffer, Verdict, [UInt8]) -> Void, onClose: @escaping (any ServerConnection) -> Void
    ) {
        self.socket = socket
        self.loop = loop
        self.timeout = timeout
        self.decided = decided
        self.onClose = onClose
    }

    func start() throws {
        try loop.register(socket.fileDescriptor, handler: self, readable: true, writable: false)
        timer = loop.scheduleTimer(after: timeout) { [weak self] in self?.close() }
    }

    /// Classifies the bytes received so far; nil while they could still be either.
    static func verdict(_ bytes: some Collection<UInt8>) -> Verdict? {
        for (index, byte) in bytes.enumerated() where index < preface.count {
            if byte != preface[index] { return .http1 }
        }
        return bytes.count >= preface.count ? .http2 : nil
    }

    func readable() {
        while !isDone {
            let wanted = Self.preface.count - received.count
            let outcome = withUnsafeTemporaryAllocation(byteCount: wanted, alignment: 1) { buffer -> Result<Int?, SocketError> in
                Result { () throws(SocketError) -> Int? in
                    guard let count = try socket.read(into: buffer) else { return nil }
                    received.append(contentsOf: buffer[0..<count])
                    return count
                }
            }
            guard case .success(let count) = outcome else { return close() }
            guard let count else { return }  // nothing more yet
            guard count > 0 else { return close() }
            guard let verdict = Self.verdict(received) else { continue }
            return hand(over: verdict)
        }
    }

    private func hand(over verdict: Verdict) {
        isDone = true
        if let timer { _ = loop.cancelTimer(timer) }
        loop.deregister(socket.fileDescriptor)
        decided(self, verdict, received)
    }

    func writable() {}
    func errorOrHangUp() { close() }
    func drain() { close() }

    func close() {
        guard !isDone else { return }
        isDone = true
        if let timer { _ = loop.cancelTimer(timer) }
        loop.deregister(socket.fileDescriptor)
        socket.close()
        onClose(self)
    }
}
