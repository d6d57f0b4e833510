import Glibc

/// A socket system call that failed: which call, its `errno`, and the address involved.
///
/// ```swift
/// do { try socket.finishConnect() }
/// catch let error as SocketError where error.errno == ECONNREFUSED { … }
/// ```
public struct SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The operation that failed, named after its system call (`"connect"`, `"bind"`, …).
    /// A non-blocking connect's failure is reported as `"connect"` by ``Socket/finishConnect()``.
    public let call: String
    /// The error number, e.g. `ECONNREFUSED`.
    public let errno: Int32
    /// The address being bound or connected to, when there was one.
    public let address: SocketAddress?

    /// An error for `call` failing with `errno`.
    public init(call: String, errno: Int32, address: SocketAddress? = nil) {
        self.call = call
        self.errno = errno
        self.address = address
    }

    /// The call, the address if any, and `strerror`'s text for `errno`,
    /// e.g. `connect ipv4:127.0.0.1:80 failed: Connection refused (errno 111)`.
    public var description: String {
        let target = address.map { " \($0)" } ?? ""
        return "\(call)\(target) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
