import Glibc

/// Where a socket listens or connects: an IPv4 or IPv6 address with a port, or the path of a
/// Unix domain socket.
///
/// ```swift
/// let tcp = try SocketAddress(parsing: "127.0.0.1:50051")
/// let v6 = try SocketAddress.ipv6("::1", port: 50051)
/// let local = try SocketAddress.unixDomainSocket(path: "/run/pitlane.sock")
/// print(tcp)  // ipv4:127.0.0.1:50051
/// ```
///
/// `description` uses gRPC's name syntax (`ipv4:127.0.0.1:50051`, `ipv6:[::1]:50051`,
/// `unix:/run/pitlane.sock`), which ``init(parsing:)`` reads back, along with the plain
/// forms of ``plainDescription``.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    enum Storage: Hashable, Sendable {
        /// The address in network byte order, as in `in_addr.s_addr`.
        case ipv4(address: UInt32, port: UInt16)
        /// The 16 address bytes in network order; `scopeID` names the interface of a
        /// link-local address (0 for none).
        case ipv6(address: [UInt8], port: UInt16, scopeID: UInt32)
        /// Empty only for the unnamed peer of a Unix socket connection.
        case unix(path: String)
    }

    let storage: Storage

    init(_ storage: Storage) {
        self.storage = storage
    }

    /// The longest Unix socket path, in bytes: `sun_path` holds 108 bytes with the
    /// terminating NUL.
    public static let maximumUnixPathLength =
        MemoryLayout<sockaddr_un>.size
        - MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! - 1

    /// An IPv4 address from dotted-decimal text such as `"127.0.0.1"` (no host names: see
    /// ``resolve(host:port:)``).
    ///
    /// - Parameter address: the address, in dotted-decimal text.
    /// - Parameter port: 0 to 65535; 0 lets `listen` pick a free port.
    public static func ipv4(_ address: String, port: Int) throws(SocketAddressError) -> SocketAddress {
        let text = "\(address):\(port)"
        let port = try validPort(port, input: text)
        var parsed = in_addr()
        guard inet_pton(AF_INET, address, &parsed) == 1 else {
            throw SocketAddressError(input: text, reason: "\"\(address)\" is not an IPv4 address")
        }
        return SocketAddress(.ipv4(address: parsed.s_addr, port: port))
    }

    /// An IPv6 address from text such as `"::1"`, optionally with a zone (`"fe80::1%eth0"`,
    /// `"fe80::1%2"`), without brackets.
    ///
    /// - Parameter address: the address, in text, without brackets.
    /// - Parameter port: 0 to 65535; 0 lets `listen` pick a free port.
    public static func ipv6(_ address: String, port: Int) throws(SocketAddressError) -> SocketAddress {
        let text = "[\(address)]:\(port)"
        let port = try validPort(port, input: text)
        let parts = address.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        var scopeID: UInt32 = 0
        if parts.count == 2 {
            let zone = String(parts[1])
            scopeID = UInt32(zone) ?? if_nametoindex(zone)
            guard scopeID != 0 else {
                throw SocketAddressError(input: text, reason: "\"\(zone)\" is not a network interface")
            }
        }
        var parsed = in6_addr()
        guard inet_pton(AF_INET6, String(parts[0]), &parsed) == 1 else {
            throw SocketAddressError(input: text, reason: "\"\(parts[0])\" is not an IPv6 address")
        }
        let bytes = withUnsafeBytes(of: parsed) { Array($0) }
        return SocketAddress(.ipv6(address: bytes, port: port, scopeID: scopeID))
    }

    /// The Unix domain socket at `path` (absolute, or relative to the working directory).
    ///
    /// - Throws: if `path` is empty, contains a NUL byte, or is longer than
    ///   ``maximumUnixPathLength`` bytes.
    public static func unixDomainSocket(path: String) throws(SocketAddressError) -> SocketAddress {
        let input = "unix:\(path)"
        guard !path.isEmpty else { throw SocketAddressError(input: input, reason: "the path is empty") }
        guard !path.utf8.contains(0) else {
            throw SocketAddressError(input: input, reason: "the path contains a NUL byte")
        }
        guard path.utf8.count <= maximumUnixPathLength else {
            throw SocketAddressError(
                input: input,
                reason: "the path is \(path.utf8.count) bytes; Unix sockets allow \(maximumUnixPathLength)")
        }
        return SocketAddress(.unix(path: path))
    }

    /// The port of an IP address; nil for a Unix socket.
    public var port: Int? {
        switch storage {
        case .ipv4(_, let port), .ipv6(_, let port, _): Int(port)
        case .unix: nil
        }
    }

    /// The IP address as text (`"127.0.0.1"`, `"::1"`, `"fe80::1%2"`); nil for a Unix socket.
    public var ipAddress: String? {
        switch storage {
        case .ipv4(let address, _):
            var raw = in_addr(s_addr: address)
            return Self.format(family: AF_INET, &raw)
        case .ipv6(let address, _, let scopeID):
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: address) }
            let text = Self.format(family: AF_INET6, &raw)
            return scopeID == 0 ? text : "\(text)%\(scopeID)"
        case .unix:
            return nil
        }
    }

    /// The path of a Unix socket; nil for an IP address.
    public var path: String? {
        if case .unix(let path) = storage { return path }
        return nil
    }

    /// Whether the address is on the loopback interface: 127.0.0.0/8, `::1`, an IPv4-mapped
    /// loopback address, or any Unix socket.
    public var isLoopback: Bool {
        switch storage {
        case .ipv4(let address, _):
            return UInt32(bigEndian: address) >> 24 == 127
        case .ipv6(let address, _, _):
            let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
            return address == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
                || (address.starts(with: mappedPrefix) && address[12] == 127)
        case .unix:
            return true
        }
    }

    /// gRPC's name syntax: `ipv4:127.0.0.1:50051`, `ipv6:[::1]:50051`, `unix:/path`.
    public var description: String {
        switch storage {
        case .ipv4: "ipv4:\(plainDescription)"
        case .ipv6: "ipv6:\(plainDescription)"
        case .unix: plainDescription
        }
    }

    /// The address without a scheme: `127.0.0.1:50051`, `[::1]:50051`; a Unix socket keeps
    /// its `unix:` prefix (`unix:/path`), which is what tells it apart.
    public var plainDescription: String {
        switch storage {
        case .ipv4(_, let port): "\(ipAddress!):\(port)"
        case .ipv6(_, let port, _): "[\(ipAddress!)]:\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }

    private static func validPort(_ port: Int, input: String) throws(SocketAddressError) -> UInt16 {
        guard let valid = UInt16(exactly: port) else {
            throw SocketAddressError(input: input, reason: "port \(port) is outside 0...65535")
        }
        return valid
    }

    private static func format(family: Int32, _ address: UnsafeRawPointer) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            // Cannot fail: the family is valid and the buffer fits the longest IPv6 text.
            inet_ntop(family, address, buffer.baseAddress, socklen_t(buffer.count))
            return String(cString: buffer.baseAddress!)
        }
    }
}
