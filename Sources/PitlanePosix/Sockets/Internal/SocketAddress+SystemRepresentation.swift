import Glibc

extension SocketAddress {
    /// The address family for `socket(2)`: `AF_INET`, `AF_INET6` or `AF_UNIX`.
    var family: Int32 {
        switch storage {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        case .unix: AF_UNIX
        }
    }

    /// Calls `body` with the address as a `sockaddr` and its length, for `bind` and `connect`.
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        switch storage {
        case .ipv4(let address, let port):
            var raw = sockaddr_in()
            raw.sin_family = sa_family_t(AF_INET)
            raw.sin_port = port.bigEndian
            raw.sin_addr.s_addr = address
            return Self.withGeneric(&raw, body)
        case .ipv6(let address, let port, let scopeID):
            var raw = sockaddr_in6()
            raw.sin6_family = sa_family_t(AF_INET6)
            raw.sin6_port = port.bigEndian
            raw.sin6_scope_id = scopeID
            withUnsafeMutableBytes(of: &raw.sin6_addr) { $0.copyBytes(from: address) }
            return Self.withGeneric(&raw, body)
        case .unix(let path):
            var raw = sockaddr_un()
            raw.sun_family = sa_family_t(AF_UNIX)
            // The factory methods checked that the path fits with its NUL, which `raw` is
            // zero-filled with.
            withUnsafeMutableBytes(of: &raw.sun_path) { $0.copyBytes(from: path.utf8) }
            let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.utf8.count + 1
            return withUnsafePointer(to: &raw) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(length)) }
            }
        }
    }

    /// Reads an address the kernel filled in (`accept`, `getsockname`, `getpeername`,
    /// `getaddrinfo`) for one of the three families.
    init(_ address: UnsafeRawPointer, length: socklen_t) {
        switch Int32(address.load(as: sockaddr.self).sa_family) {
        case AF_INET:
            let raw = address.load(as: sockaddr_in.self)
            self.init(.ipv4(address: raw.sin_addr.s_addr, port: UInt16(bigEndian: raw.sin_port)))
        case AF_INET6:
            let raw = address.load(as: sockaddr_in6.self)
            let bytes = withUnsafeBytes(of: raw.sin6_addr) { Array($0) }
            let port = UInt16(bigEndian: raw.sin6_port)
            self.init(.ipv6(address: bytes, port: port, scopeID: raw.sin6_scope_id))
        case AF_UNIX:
            let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
            let pathLength = max(0, Int(length) - pathOffset)
            let bytes = UnsafeRawBufferPointer(start: address + pathOffset, count: pathLength)
            self.init(.unix(path: String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)))
        case let family:
            preconditionFailure("socket address family \(family) is not IPv4, IPv6 or Unix")
        }
    }

    private static func withGeneric<Raw, Result>(
        _ raw: inout Raw,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
    ) -> Result {
        withUnsafePointer(to: &raw) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<Raw>.size))
            }
        }
    }
}
