import PitlanePosix

/// Connects, sends a payload while reading the echo, shuts down its writing side, and
/// returns everything read until end of stream. Loop-confined.
final class EchoClient: FileDescriptorHandler {
    private let loop: EventLoop
    private let socket: Socket
    private let server: SocketAddress
    private var continuation: CheckedContinuation<[UInt8], any Error>?
    private var unsent: OutboundBuffer
    private var connecting = true
    private var received: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    private init(
        loop: EventLoop,
        socket: Socket,
        server: SocketAddress,
        payload: [UInt8],
        continuation: CheckedContinuation<[UInt8], any Error>
    ) {
        self.loop = loop
        self.socket = socket
        self.server = server
        self.unsent = OutboundBuffer()
        self.unsent.append(payload)
        self.continuation = continuation
    }

    /// The echo of `payload` from the server at `server`, with the client on `loop`.
    static func roundTrip(
        _ payload: [UInt8],
        to server: SocketAddress,
        on loop: EventLoop
    ) async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                do {
                    let socket = try Socket(for: server)
                    let client = EchoClient(
                        loop: loop, socket: socket, server: server, payload: payload,
                        continuation: continuation)
                    // Writability reports the end of a connect in progress, and is where sending
                    // starts either way.
                    let result = try socket.connect(to: server)
                    let fd = socket.fileDescriptor
                    try loop.register(fd, handler: client, readable: result == .connected, writable: true)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    func readable() {
        do {
            let count = try chunk.withUnsafeMutableBytes { try socket.read(into: $0) }
            switch count {
            case nil:
                return
            case 0:
                finish(.success(received))
            case let count?:
                received.append(contentsOf: chunk[..<count])
            }
        } catch {
            finish(.failure(error))
        }
    }

    func writable() {
        do {
            if connecting {
                try socket.finishConnect()
                connecting = false
                let peer = try socket.peerAddress
                guard peer == server else { throw UnexpectedPeer(peer: peer) }
            }
            guard try unsent.flush(to: socket) else {
                try loop.setInterest(socket.fileDescriptor, readable: true, writable: true)
                return
            }
            try socket.shutdownWrite()
            try loop.setInterest(socket.fileDescriptor, readable: true, writable: false)
        } catch {
            finish(.failure(error))
        }
    }

    func errorOrHangUp() {
        finish(
            Result { () throws -> [UInt8] in
                try socket.finishConnect()
                throw UnexpectedHangUp()
            })
    }

    func close() {
        finish(.failure(EventLoopError.shutDown))
    }

    private func finish(_ result: Result<[UInt8], any Error>) {
        loop.deregister(socket.fileDescriptor)
        socket.close()
        continuation?.resume(with: result)
        continuation = nil
    }
}

/// The connection hung up without an error and before the echo's end of stream.
struct UnexpectedHangUp: Error {}

/// The connected socket's peer is not the address it connected to.
struct UnexpectedPeer: Error {
    let peer: SocketAddress
}
