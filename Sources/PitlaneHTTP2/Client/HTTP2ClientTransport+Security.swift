extension HTTP2ClientTransport {
    /// How a client secures its connection.
    public enum Security: Sendable {
        /// HTTP/2 over cleartext TCP or Unix sockets (`h2c` with prior knowledge).
        case plaintext
        /// HTTP/2 over TLS 1.2 or later: the server's certificate is verified against the
        /// trust roots and the server's name, and the server must select ALPN "h2".
        case tls(TLSConfig)

        var tlsConfig: TLSConfig? {
            if case .tls(let config) = self { config } else { nil }
        }
    }

    /// What the client trusts, the certificate it presents, and the name it expects.
    public typealias TLSConfig = TLSClientConfig
}
