extension SocketAddress {
    /// Reads an address in gRPC's name syntax or its plain form:
    ///
    /// - `ipv4:127.0.0.1:50051` or `127.0.0.1:50051`
    /// - `ipv6:[::1]:50051` or `[::1]:50051` (brackets required; a zone as `[fe80::1%eth0]`)
    /// - `unix:/absolute/path`, `unix:relative/path` or `unix:///absolute/path`
    ///
    /// The port is required. Host names are not addresses; resolve them with
    /// ``resolve(host:port:)``.
    public init(parsing text: String) throws(SocketAddressError) {
        if text.hasPrefix("unix:") {
            var path = text.dropFirst("unix:".count)
            if path.hasPrefix("//") {
                path = path.dropFirst(2)
                guard path.hasPrefix("/") else {
                    throw SocketAddressError(input: text, reason: "unix:// needs an absolute path")
                }
            }
            self = try .unixDomainSocket(path: String(path))
        } else if text.hasPrefix("ipv4:") {
            self = try Self.parseIPv4(text.dropFirst("ipv4:".count), input: text)
        } else if text.hasPrefix("ipv6:") {
            self = try Self.parseIPv6(text.dropFirst("ipv6:".count), input: text)
        } else if text.hasPrefix("[") {
            self = try Self.parseIPv6(text[...], input: text)
        } else {
            self = try Self.parseIPv4(text[...], input: text)
        }
    }

    /// `127.0.0.1:50051`
    private static func parseIPv4(
        _ text: Substring,
        input: String
    ) throws(SocketAddressError) -> SocketAddress {
        guard let colon = text.lastIndex(of: ":") else {
            throw SocketAddressError(input: input, reason: "expected address:port")
        }
        let port = try parsePort(text[text.index(after: colon)...], input: input)
        do {
            return try .ipv4(String(text[..<colon]), port: port)
        } catch {
            throw SocketAddressError(input: input, reason: error.reason)
        }
    }

    /// `[::1]:50051`
    private static func parseIPv6(
        _ text: Substring,
        input: String
    ) throws(SocketAddressError) -> SocketAddress {
        guard text.hasPrefix("["), let close = text.firstIndex(of: "]"),
            text[text.index(after: close)...].hasPrefix(":")
        else {
            throw SocketAddressError(input: input, reason: "expected [address]:port")
        }
        let port = try parsePort(text[text.index(close, offsetBy: 2)...], input: input)
        do {
            return try .ipv6(String(text[text.index(after: text.startIndex)..<close]), port: port)
        } catch {
            throw SocketAddressError(input: input, reason: error.reason)
        }
    }

    private static func parsePort(_ text: Substring, input: String) throws(SocketAddressError) -> Int {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text),
            port <= Int(UInt16.max)
        else {
            throw SocketAddressError(input: input, reason: "\"\(text)\" is not a port in 0...65535")
        }
        return port
    }
}
