import Glibc

extension Socket {
    /// How far a non-blocking ``Socket/connect(to:)`` got.
    public enum ConnectResult: Hashable, Sendable {
        /// The connection is established (typical of Unix sockets).
        case connected
        /// The handshake continues: wait until the socket is writable (or reports an error),
        /// then call ``Socket/finishConnect()``.
        case inProgress
    }

    /// Starts connecting to `address` without waiting for the handshake.
    ///
    /// ```swift
    /// let socket = try Socket(for: address)
    /// if try socket.connect(to: address) == .inProgress {
    ///     try loop.register(socket.fileDescriptor, handler: connector, readable: false, writable: true)
    /// }
    /// // in connector.writable() and connector.errorOrHangUp():
    /// try socket.finishConnect()
    /// ```
    ///
    /// - Throws: errors known at once, e.g. `ECONNREFUSED` when the loopback peer has no
    ///   listener. A Unix socket whose listener's backlog is full fails with `EAGAIN`, which
    ///   Linux offers no readiness event for: retry later.
    public func connect(to address: SocketAddress) throws(SocketError) -> ConnectResult {
        connectTarget = address
        let error = address.withSockAddr { Glibc.connect(fileDescriptor, $0, $1) == 0 ? 0 : errno }
        switch error {
        case 0:
            return .connected
        // An interrupted connect(2) carries on in the background, like EINPROGRESS.
        case EINPROGRESS, EINTR:
            return .inProgress
        default:
            throw SocketError(call: "connect", errno: error, address: address)
        }
    }

    /// Reports how an ``ConnectResult/inProgress`` connection ended, once the socket became
    /// writable or reported an error: returns if connected, throws the connect error (as
    /// call `"connect"`, with `SO_ERROR`'s errno, e.g. `ECONNREFUSED`) otherwise.
    ///
    /// Call it only after that readiness: before it, the pending connection looks like
    /// success.
    public func finishConnect() throws(SocketError) {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fileDescriptor, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else {
            throw SocketError(call: "getsockopt", errno: errno, address: connectTarget)
        }
        guard error == 0 else { throw SocketError(call: "connect", errno: error, address: connectTarget) }
    }
}
