/// A server's certificate and key, and what it asks of client certificates. A transport
/// names it as its own (`HTTP2ServerTransport.TLSConfig`).
public struct TLSServerConfig: Sendable {
    /// Whether the server asks for and checks a client certificate (mutual TLS).
    public enum ClientCertificateVerification: Sendable {
        /// No client certificate is asked for.
        case none
        /// A client certificate is asked for; a client may go without, but a certificate
        /// it sends must chain to ``TLSServerConfig/trustRootsPath``.
        case optional
        /// Every client must present a certificate that chains to ``TLSServerConfig/trustRootsPath``.
        case required
    }

    /// A PEM file with the server's certificate first, then any intermediates.
    public var certificateChainPath: String
    /// A PEM file with the certificate's private key (unencrypted).
    public var privateKeyPath: String
    /// Default `.none`.
    public var clientCertificateVerification: ClientCertificateVerification
    /// A PEM file of the CA certificates client certificates must chain to; nil for the
    /// system's default roots. Unused with `.none`.
    public var trustRootsPath: String?

    /// A configuration from PEM files; the files are read when a transport starts listening.
    public init(
        certificateChainPath: String,
        privateKeyPath: String,
        clientCertificateVerification: ClientCertificateVerification = .none,
        trustRootsPath: String? = nil
    ) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
        self.clientCertificateVerification = clientCertificateVerification
        self.trustRootsPath = trustRootsPath
    }
}
