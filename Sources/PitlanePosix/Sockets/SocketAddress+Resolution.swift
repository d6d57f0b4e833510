import Glibc

extension SocketAddress {
    /// Every address `host` resolves to for TCP on `port`, in the resolver's order of
    /// preference, without duplicates.
    ///
    /// `getaddrinfo` blocks for as long as DNS takes, so it runs on a short-lived thread of
    /// its own: neither an event loop nor Swift's cooperative pool (two threads on a
    /// two-core machine) is held up.
    ///
    /// - Throws: ``SocketAddressError`` if the name does not resolve, or an
    ///   ``EventLoopError`` if no thread could be started.
    public static func resolve(host: String, port: Int) async throws -> [SocketAddress] {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try PosixThread.spawnDetached(name: "pitlane-dns") {
                    continuation.resume(
                        with: Result { () throws(SocketAddressError) in
                            try resolveBlocking(host: host, port: port)
                        })
                }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// ``resolve(host:port:)`` on the calling thread, which it blocks: never call it on an
    /// event loop.
    public static func resolveBlocking(
        host: String,
        port: Int
    ) throws(SocketAddressError) -> [SocketAddress] {
        guard UInt16(exactly: port) != nil else {
            throw SocketAddressError(input: "\(host):\(port)", reason: "port \(port) is outside 0...65535")
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            let reason =
                status == EAI_SYSTEM
                ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            throw SocketAddressError(input: host, reason: "getaddrinfo: \(reason)")
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var next = list
        while let entry = next?.pointee {
            next = entry.ai_next
            let family = entry.ai_family
            guard family == AF_INET || family == AF_INET6, let raw = entry.ai_addr else { continue }
            let address = SocketAddress(raw, length: entry.ai_addrlen)
            if !addresses.contains(address) { addresses.append(address) }
        }
        guard !addresses.isEmpty else {
            throw SocketAddressError(input: host, reason: "getaddrinfo returned no IPv4 or IPv6 address")
        }
        return addresses
    }
}
