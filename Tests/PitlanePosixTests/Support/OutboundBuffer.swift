import PitlanePosix

/// Bytes waiting to be written to a non-blocking socket, kept across partial writes.
struct OutboundBuffer {
    private var bytes: [UInt8] = []
    private var start = 0

    var isEmpty: Bool { start == bytes.count }

    mutating func append(_ more: UnsafeRawBufferPointer) {
        if start > 0 && start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        }
        bytes.append(contentsOf: more)
    }

    mutating func append(_ more: [UInt8]) {
        more.withUnsafeBytes { append($0) }
    }

    /// Writes what the socket takes now; true once everything is written.
    mutating func flush(to socket: Socket) throws -> Bool {
        while !isEmpty {
            let written = try bytes.withUnsafeBytes { all in
                try socket.write(UnsafeRawBufferPointer(rebasing: all[start...]))
            }
            guard let written else { return false }
            start += written
        }
        return true
    }
}
