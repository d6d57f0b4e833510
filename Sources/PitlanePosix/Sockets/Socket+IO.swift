import Glibc

extension Socket {
    /// The most buffers one `sendmsg` takes (`IOV_MAX` in `<limits.h>`, 1024 on Linux).
    static let maximumWriteBuffers = 1024

    /// Reads what is available into `buffer`, which must not be empty.
    ///
    /// - Returns: the number of bytes read; 0 at end of stream (the peer shut down its
    ///   writing side); nil if nothing is available yet (`EAGAIN`).
    /// - Throws: the read error, e.g. `ECONNRESET`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> Int? {
        precondition(!buffer.isEmpty, "reading into an empty buffer cannot tell data from end of stream")
        while true {
            let count = Glibc.read(fileDescriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return nil
            case let error: throw SocketError(call: "read", errno: error)
            }
        }
    }

    /// Writes as much of `buffers`, in order, as the socket takes now, in one gathering
    /// `sendmsg` (a `writev` that can pass `MSG_NOSIGNAL`). At most
    /// 1,024 buffers are written per call.
    ///
    /// - Returns: the number of bytes written, possibly fewer than given: keep the rest and
    ///   wait for writability. nil if the socket takes nothing now (`EAGAIN`).
    /// - Throws: the write error, e.g. `EPIPE` or `ECONNRESET` when the peer has gone.
    public func write(_ buffers: [UnsafeRawBufferPointer]) throws(SocketError) -> Int? {
        let count = min(buffers.count, Self.maximumWriteBuffers)
        while true {
            let (written, error) = withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) { vectors in
                for index in 0..<count {
                    vectors[index] = iovec(
                        iov_base: UnsafeMutableRawPointer(mutating: buffers[index].baseAddress),
                        iov_len: buffers[index].count)
                }
                var message = msghdr()
                message.msg_iov = vectors.baseAddress
                message.msg_iovlen = count
                let written = sendmsg(fileDescriptor, &message, Int32(MSG_NOSIGNAL))
                return (written, written < 0 ? errno : 0)
            }
            if written >= 0 { return written }
            switch error {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw SocketError(call: "sendmsg", errno: error)
            }
        }
    }

    /// The gathering `write(_:)` for one buffer.
    public func write(_ buffer: UnsafeRawBufferPointer) throws(SocketError) -> Int? {
        try write([buffer])
    }

    /// Shuts down the writing side: the peer reads end of stream after the bytes already
    /// written, and can still send to this socket.
    public func shutdownWrite() throws(SocketError) {
        guard Glibc.shutdown(fileDescriptor, Int32(SHUT_WR)) == 0 else {
            throw SocketError(call: "shutdown", errno: errno)
        }
    }
}
