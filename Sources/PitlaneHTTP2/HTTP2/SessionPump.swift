/// Moves bytes between a socket and an nghttp2 session, for client and server connections
/// alike: reads until the socket would block, writes until nghttp2 has nothing more or the
/// socket is full (keeping what it did not take), and says when to wait for writability.
struct SessionPump {
    /// What reading found.
    enum ReadOutcome {
        /// The socket has nothing more for now; `received` bytes went to the session.
        case drained(received: Int)
        /// The peer closed the connection.
        case endOfStream
        /// The socket failed, or the peer broke the protocol (nghttp2 then queued a GOAWAY).
        case failed(any Error)
    }

    /// Output nghttp2 produced that the socket did not take yet, from `unsentStart` on.
    private var unsent: [UInt8] = []
    private var unsentStart = 0
    /// Whether the loop is asked for writability.
    private var wantsWritable = false
    private var readBuffer = [UInt8](repeating: 0, count: 65_536)

    var hasUnsentBytes: Bool { unsentStart < unsent.count }

    mutating func read(from socket: Socket, into session: NGHTTP2Session) -> ReadOutcome {
        var received = 0
        while true {
            do {
                guard let count = try readBuffer.withUnsafeMutableBytes({ try socket.read(into: $0) }) else {
                    return .drained(received: received)
                }
                guard count > 0 else { return .endOfStream }
                received += count
                try readBuffer.withUnsafeBytes { try session.receive(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            } catch {
                return .failed(error)
            }
        }
    }

    /// Writes pending output; asks `loop` for writability exactly while bytes remain unsent.
    mutating func write(from session: NGHTTP2Session, to socket: Socket, loop: EventLoop) throws {
        if hasUnsentBytes {
            let start = unsentStart
            unsentStart += try unsent.withUnsafeBytes { try socket.write([UnsafeRawBufferPointer(rebasing: $0[start...])]) } ?? 0
            // Advance an offset rather than shifting the array: a large backlog drains in O(n).
            if unsentStart == unsent.count {
                unsent.removeAll(keepingCapacity: unsent.capacity <= 1 << 20)
                unsentStart = 0
            }
        }
        while !hasUnsentBytes, let output = try session.nextOutput() {
            let written = try socket.write([output]) ?? 0
            if written < output.count { unsent.append(contentsOf: output[written...]) }
        }
        let needsWritable = hasUnsentBytes
        if needsWritable != wantsWritable {
            wantsWritable = needsWritable
            try loop.setInterest(socket.fileDescriptor, readable: true, writable: needsWritable)
        }
    }
}
