import Glibc

extension Socket {
    /// A socket bound to `address` and listening, for ``accept()``.
    ///
    /// IP sockets set `SO_REUSEADDR`, so a restarted server can bind while old connections
    /// linger in TIME_WAIT; port 0 picks a free port, read back from ``localAddress``. A
    /// Unix socket's path must not exist yet: remove a stale one first.
    ///
    /// - Parameter address: where to listen: an IP address and port, or a Unix socket's path.
    /// - Parameter backlog: connections the kernel queues before ``accept()``; Linux caps it
    ///   at `net.core.somaxconn` (4096 by default).
    public static func listen(
        on address: SocketAddress,
        backlog: Int32 = 1024
    ) throws(SocketError) -> Socket {
        let socket = try Socket(for: address)
        if address.family != AF_UNIX {
            try socket.setOption(level: SOL_SOCKET, SO_REUSEADDR, 1)
        }
        let bindError = address.withSockAddr { Glibc.bind(socket.fileDescriptor, $0, $1) == 0 ? 0 : errno }
        guard bindError == 0 else { throw SocketError(call: "bind", errno: bindError, address: address) }
        guard Glibc.listen(socket.fileDescriptor, backlog) == 0 else {
            throw SocketError(call: "listen", errno: errno, address: address)
        }
        return socket
    }

    /// The next pending connection as a non-blocking socket, or nil if none is waiting
    /// (`EAGAIN`). Call it until nil each time the listener is readable.
    ///
    /// - Throws: errors that will not clear by themselves, such as `EMFILE`. The listener
    ///   stays readable then, so stop its readable interest for a while, or the loop spins.
    public func accept() throws(SocketError) -> Socket? {
        while true {
            let fd = Linux.acceptNonBlocking(fileDescriptor, nil, nil)
            if fd >= 0 {
                let accepted = Socket(adopting: fd, isTCP: isTCP)
                if isTCP { try accepted.setOption(level: Int32(IPPROTO_TCP), TCP_NODELAY, 1) }
                return accepted
            }
            switch errno {
            case EAGAIN, EWOULDBLOCK:
                return nil
            // A connection that failed between the handshake and accept(2): try the next one.
            // accept(2) documents that Linux reports such network errors here, to be retried.
            case EINTR, ECONNABORTED, EPROTO, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH,
                ENETUNREACH:
                continue
            case let error:
                throw SocketError(call: "accept4", errno: error)
            }
        }
    }
}
