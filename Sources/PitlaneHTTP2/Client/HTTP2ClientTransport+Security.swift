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
    public struct TLSConfig: Sendable {
        /// A PEM file of the CA certificates the server's certificate must chain to; nil for
        /// the system's default roots.
        public var trustRootsPath: String?
        /// A PEM file with the client's certificate and any intermediates, for servers that
        /// ask for one (mutual TLS). Needs ``privateKeyPath``.
        public var certificateChainPath: String?
        /// A PEM file with the client certificate's private key (unencrypted).
        public var privateKeyPath: String?
        /// The name sent as SNI and checked against the server's certificate. Default nil:
        /// the target's host; an IP address target is checked against the certificate's IP
        /// addresses (and sends no SNI); a Unix socket target expects "localhost".
        public var serverHostnameOverride: String?

        public init(
            trustRootsPath: String? = nil,
            certificateChainPath: String? = nil,
            privateKeyPath: String? = nil,
            serverHostnameOverride: String? = nil
        ) {
            self.trustRootsPath = trustRootsPath
            self.certificateChainPath = certificateChainPath
            self.privateKeyPath = privateKeyPath
            self.serverHostnameOverride = serverHostnameOverride
        }
    }
}
