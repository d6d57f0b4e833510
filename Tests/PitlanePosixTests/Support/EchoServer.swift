import PitlanePosix

/// Accepts connections on one event loop and writes every byte back. Loop-confined.
final class EchoServer: FileDescriptorHandler {
    private let loop: EventLoop
    private let listener: Socket

    private init(loop: EventLoop, listener: Socket) {
        self.loop = loop
        self.listener = listener
    }

    /// Listens on `address` and returns the bound address (with the picked port). The
    /// server runs until `loop` shuts down.
    static func start(on loop: EventLoop, at address: SocketAddress) async throws -> SocketAddress {
        try await loop.submit {
            let listener = try Socket.listen(on: address)
            let server = EchoServer(loop: loop, listener: listener)
            try loop.register(listener.fileDescriptor, handler: server, readable: true, writable: false)
            return try listener.localAddress
        }
    }

    func readable() {
        do {
            while let socket = try listener.accept() {
                let connection = EchoConnection(loop: loop, socket: socket)
                try loop.register(socket.fileDescriptor, handler: connection, readable: true, writable: false)
            }
        } catch {
            // The client waiting for this connection fails the test.
            close()
        }
    }

    func writable() {}

    func errorOrHangUp() { close() }

    func close() {
        loop.deregister(listener.fileDescriptor)
        listener.close()
    }
}

/// One echoed connection: reads a chunk per wake-up, and while the echo cannot be written
/// completely stops reading and waits for writability, so a slow reader applies
/// backpressure instead of growing the buffer.
private final class EchoConnection: FileDescriptorHandler {
    private let loop: EventLoop
    private let socket: Socket
    private var pending = OutboundBuffer()
    private var peerFinished = false
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    init(loop: EventLoop, socket: Socket) {
        self.loop = loop
        self.socket = socket
    }

    func readable() {
        do {
            let count = try chunk.withUnsafeMutableBytes { try socket.read(into: $0) }
            switch count {
            case nil:
                return
            case 0:
                peerFinished = true
            case let count?:
                chunk.withUnsafeBytes { pending.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
            try flush()
        } catch {
            close()
        }
    }

    func writable() {
        do { try flush() } catch { close() }
    }

    func errorOrHangUp() { close() }

    func close() {
        loop.deregister(socket.fileDescriptor)
        socket.close()
    }

    private func flush() throws {
        guard try pending.flush(to: socket) else {
            try loop.setInterest(socket.fileDescriptor, readable: false, writable: true)
            return
        }
        if peerFinished {
            close()
        } else {
            try loop.setInterest(socket.fileDescriptor, readable: true, writable: false)
        }
    }
}
