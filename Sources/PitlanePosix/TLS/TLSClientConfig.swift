/// What a client trusts, the certificate it presents, and the name it expects. A transport
/// names it as its own (`HTTP2ClientTransport.TLSConfig`).
public struct TLSClientConfig: Sendable {
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

    /// A configuration from PEM files; the files are read when the transport is made.
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
