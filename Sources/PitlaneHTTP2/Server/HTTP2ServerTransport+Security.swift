extension HTTP2ServerTransport {
    /// How a server secures its connections.
    public enum Security: Sendable {
        /// HTTP/2 over cleartext TCP or Unix sockets (`h2c` with prior knowledge).
        case plaintext
        /// HTTP/2 over TLS 1.2 or later, with ALPN "h2" required of every client.
        case tls(TLSConfig)
    }

    /// The server's certificate and key, and what it asks of client certificates.
    public typealias TLSConfig = TLSServerConfig
}
