/// Why TLS could not be set up from its configuration, or why a TLS connection failed.
///
/// Configuration errors surface where the configuration is used: `HTTP2ClientTransport`'s
/// initializer, `HTTP2ServerTransport.listen`. Connection errors reach RPCs as the message of
/// an `.unavailable` error, and a server transport's `onTLSHandshakeFailure`.
public enum TLSError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A certificate, key or trust-roots file is missing or cannot be read.
    case unreadableFile(path: String, reason: String)
    /// The file holds no valid PEM certificate chain.
    case invalidCertificateChain(path: String, reason: String)
    /// The file holds no valid PEM private key.
    case invalidPrivateKey(path: String, reason: String)
    /// The private key does not belong to the certificate.
    case privateKeyMismatch(certificatePath: String, privateKeyPath: String)
    /// The file holds no valid PEM trust roots.
    case invalidTrustRoots(path: String, reason: String)
    /// The configuration is incomplete or contradictory, e.g. a certificate without its key.
    case invalidConfiguration(reason: String)
    /// The handshake failed: the peer's certificate did not verify (with OpenSSL's reason,
    /// e.g. "hostname mismatch"), the peer sent an alert, or no protocol version or cipher
    /// was common.
    case handshakeFailed(reason: String)
    /// The peers did not agree on HTTP/2 through ALPN ("h2").
    case http2NotNegotiated(reason: String)
    /// After the handshake: a record that did not decrypt, an alert, or another protocol error.
    case connectionFailed(reason: String)

    /// A one-line explanation, naming the file involved where there is one.
    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason): "cannot read \(path): \(reason)"
        case .invalidCertificateChain(let path, let reason): "\(path) holds no valid PEM certificate chain: \(reason)"
        case .invalidPrivateKey(let path, let reason): "\(path) holds no valid PEM private key: \(reason)"
        case .privateKeyMismatch(let certificate, let key): "the private key in \(key) does not match the certificate in \(certificate)"
        case .invalidTrustRoots(let path, let reason): "\(path) holds no valid PEM trust roots: \(reason)"
        case .invalidConfiguration(let reason): "invalid TLS configuration: \(reason)"
        case .handshakeFailed(let reason): "TLS handshake failed: \(reason)"
        case .http2NotNegotiated(let reason): "TLS handshake failed: HTTP/2 was not negotiated (ALPN h2): \(reason)"
        case .connectionFailed(let reason): "TLS connection failed: \(reason)"
        }
    }

    /// Whether a handshake failed (rather than the configuration or an established connection).
    package var isHandshakeFailure: Bool {
        switch self {
        case .handshakeFailed, .http2NotNegotiated: true
        default: false
        }
    }
}
