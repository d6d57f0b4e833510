import Glibc

/// A non-blocking stream socket (TCP or Unix domain) that owns its file descriptor and
/// closes it in ``close()`` or, at the latest, `deinit`.
///
/// Every call returns at once: where the system call would block, the method returns nil
/// (or ``ConnectResult/inProgress``) and the caller waits for readiness on an
/// ``EventLoop``. TCP sockets have `TCP_NODELAY` set, because gRPC frames are written whole
/// and should leave at once. Writes never raise `SIGPIPE`: they use `sendmsg` with
/// `MSG_NOSIGNAL`, so a peer that went away surfaces as `EPIPE` from `write(_:)` instead of
/// killing the process, and no process-wide signal disposition is touched.
///
/// A socket is not `Sendable`: it belongs to one thread at a time, normally its loop's.
public final class Socket {
    /// The descriptor, for ``EventLoop/register(_:handler:readable:writable:)``; -1 once closed.
    public private(set) var fileDescriptor: Int32
    let isTCP: Bool
    /// The address of the last ``connect(to:)``, for error messages.
    var connectTarget: SocketAddress?

    init(adopting fileDescriptor: Int32, isTCP: Bool) {
        self.fileDescriptor = fileDescriptor
        self.isTCP = isTCP
    }

    /// A new, unconnected, non-blocking stream socket of `address`'s family, ready for
    /// ``connect(to:)`` or binding.
    public convenience init(for address: SocketAddress) throws(SocketError) {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = Glibc.socket(address.family, type, 0)
        guard fd >= 0 else { throw SocketError(call: "socket", errno: errno, address: address) }
        self.init(adopting: fd, isTCP: address.family != AF_UNIX)
        if isTCP { try setOption(level: Int32(IPPROTO_TCP), TCP_NODELAY, 1) }
    }

    deinit {
        close()
    }

    /// Whether ``close()`` has not been called yet.
    public var isOpen: Bool { fileDescriptor >= 0 }

    /// Closes the descriptor; later calls do nothing. Deregister it from its event loop
    /// first: the number may be reused by the next socket opened.
    public func close() {
        guard fileDescriptor >= 0 else { return }
        // Linux releases the descriptor even when close reports an error, so there is
        // nothing to retry.
        _ = Glibc.close(fileDescriptor)
        fileDescriptor = -1
    }

    /// The address the socket is bound to (after ``listen(on:backlog:)`` with port 0, the
    /// port the system picked).
    public var localAddress: SocketAddress {
        get throws(SocketError) { try address(call: "getsockname", Glibc.getsockname) }
    }

    /// The address of the connected peer; unnamed (`unix:`) for a Unix client that did not
    /// bind.
    public var peerAddress: SocketAddress {
        get throws(SocketError) { try address(call: "getpeername", Glibc.getpeername) }
    }

    func setOption(level: Int32, _ name: Int32, _ value: Int32) throws(SocketError) {
        var value = value
        guard setsockopt(fileDescriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SocketError(call: "setsockopt", errno: errno)
        }
    }

    private func address(
        call: String,
        _ get: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) throws(SocketError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { get(fileDescriptor, $0, &length) }
        }
        guard result == 0 else { throw SocketError(call: call, errno: errno) }
        return withUnsafeBytes(of: &storage) { SocketAddress($0.baseAddress!, length: length) }
    }
}

@available(*, unavailable, message: "a Socket belongs to one thread at a time, normally its event loop's")
extension Socket: Sendable {}
