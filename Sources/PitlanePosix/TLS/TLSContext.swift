import COpenSSL
import Glibc

/// An OpenSSL context (`SSL_CTX`) built from a transport's TLS configuration: certificate and
/// key, trust roots, peer verification, TLS 1.2 at least, and ALPN "h2". One per transport,
/// shared by all its connections; each connection gets its own ``TLSEngine``.
///
/// `@unchecked Sendable`: the context is not changed after it is built, and OpenSSL lets
/// threads make connections from one context concurrently.
package final class TLSContext: @unchecked Sendable {
    package enum Role { case client, server }

    package let role: Role
    private let raw: OpaquePointer
    /// Server: whether ALPN may settle on "http/1.1" (or on nothing) as well as "h2".
    private(set) var servesHTTP1 = false

    private init(role: Role) throws(TLSError) {
        ERR_clear_error()
        guard let raw = SSL_CTX_new(role == .server ? TLS_server_method() : TLS_client_method()) else {
            throw .invalidConfiguration(reason: "SSL_CTX_new failed: \(takeOpenSSLErrors())")
        }
        self.role = role
        self.raw = raw
        guard setMinimumProtocolVersion(raw, TLS1_2_VERSION) else {
            throw .invalidConfiguration(reason: "cannot require TLS 1.2: \(takeOpenSSLErrors())")
        }
        _ = SSL_CTX_set_options(raw, sslOptionNoRenegotiation | sslOptionNoCompression)
        // Partial writes: SSL_write encrypts what fits in the bounded ciphertext buffer and
        // says how much; the rest is offered again, possibly from another buffer.
        addMode(raw, UInt32(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
    }

    deinit {
        SSL_CTX_free(raw)
    }

    /// A server context: certificate, key, client verification, and the protocol chosen by
    /// ALPN: "h2", or with `servesHTTP1` "http/1.1" for clients that offer no "h2" (and for
    /// clients that offer no ALPN at all, as RFC 7301 leaves to the server).
    package static func server(_ config: TLSServerConfig, servesHTTP1: Bool = false) throws(TLSError) -> TLSContext {
        let context = try TLSContext(role: .server)
        context.servesHTTP1 = servesHTTP1
        try context.useCertificate(chainPath: config.certificateChainPath, keyPath: config.privateKeyPath)
        switch config.clientCertificateVerification {
        case .none:
            SSL_CTX_set_verify(context.raw, SSL_VERIFY_NONE, nil)
        case .optional:
            try context.trust(config.trustRootsPath, announceToClients: true)
            SSL_CTX_set_verify(context.raw, SSL_VERIFY_PEER, nil)
        case .required:
            try context.trust(config.trustRootsPath, announceToClients: true)
            SSL_CTX_set_verify(context.raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
        // No resumption: gRPC connections live long, and a resumed session would skip the
        // client certificate check's bookkeeping.
        _ = SSL_CTX_ctrl(context.raw, SSL_CTRL_SET_SESS_CACHE_MODE, Int(SSL_SESS_CACHE_OFF), nil)
        _ = SSL_CTX_set_num_tickets(context.raw, 0)
        if servesHTTP1 {
            SSL_CTX_set_alpn_select_cb(context.raw, selectHTTP2OrHTTP1, nil)
        } else {
            SSL_CTX_set_client_hello_cb(context.raw, rejectClientHelloWithoutALPN, nil)
            SSL_CTX_set_alpn_select_cb(context.raw, selectHTTP2, nil)
        }
        return context
    }

    /// A client context: trust roots, an optional client certificate, ALPN offering "h2".
    package static func client(_ config: TLSClientConfig) throws(TLSError) -> TLSContext {
        let context = try TLSContext(role: .client)
        try context.trust(config.trustRootsPath, announceToClients: false)
        switch (config.certificateChainPath, config.privateKeyPath) {
        case (nil, nil):
            break
        case (let chain?, let key?):
            try context.useCertificate(chainPath: chain, keyPath: key)
        case (_?, nil):
            throw .invalidConfiguration(reason: "a client certificate chain needs its privateKeyPath")
        case (nil, _?):
            throw .invalidConfiguration(reason: "a client private key needs its certificateChainPath")
        }
        SSL_CTX_set_verify(context.raw, SSL_VERIFY_PEER, nil)
        let offer = alpnHTTP2
        guard SSL_CTX_set_alpn_protos(context.raw, offer, UInt32(offer.count)) == 0 else {
            throw .invalidConfiguration(reason: "cannot offer ALPN h2: \(takeOpenSSLErrors())")
        }
        return context
    }

    /// A new connection's TLS state; a client's checks `serverName`.
    package func makeEngine(serverName: TLSEngine.ServerName? = nil) throws(TLSError) -> TLSEngine {
        ERR_clear_error()
        guard let ssl = SSL_new(raw) else {
            throw .invalidConfiguration(reason: "SSL_new failed: \(takeOpenSSLErrors())")
        }
        return try TLSEngine(ssl: ssl, role: role, serverName: serverName, acceptsHTTP1: servesHTTP1)
    }

    // MARK: Loading files

    private func useCertificate(chainPath: String, keyPath: String) throws(TLSError) {
        try Self.requireReadable(chainPath)
        try Self.requireReadable(keyPath)
        ERR_clear_error()
        guard SSL_CTX_use_certificate_chain_file(raw, chainPath) == 1 else {
            throw .invalidCertificateChain(path: chainPath, reason: takeOpenSSLErrors())
        }
        guard SSL_CTX_use_PrivateKey_file(raw, keyPath, SSL_FILETYPE_PEM) == 1 else {
            let code = ERR_peek_last_error()
            if ERR_GET_LIB(code) == ERR_LIB_X509 && ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH {
                ERR_clear_error()
                throw .privateKeyMismatch(certificatePath: chainPath, privateKeyPath: keyPath)
            }
            throw .invalidPrivateKey(path: keyPath, reason: takeOpenSSLErrors())
        }
        guard SSL_CTX_check_private_key(raw) == 1 else {
            ERR_clear_error()
            throw .privateKeyMismatch(certificatePath: chainPath, privateKeyPath: keyPath)
        }
    }

    /// Trusts the CA certificates in `path`, or the system's default roots when nil. A server
    /// also names them to clients, so a client with several certificates can pick.
    private func trust(_ path: String?, announceToClients: Bool) throws(TLSError) {
        ERR_clear_error()
        guard let path else {
            guard SSL_CTX_set_default_verify_paths(raw) == 1 else {
                throw .invalidConfiguration(reason: "cannot load the system's trust roots: \(takeOpenSSLErrors())")
            }
            return
        }
        try Self.requireReadable(path)
        guard SSL_CTX_load_verify_locations(raw, path, nil) == 1 else {
            throw .invalidTrustRoots(path: path, reason: takeOpenSSLErrors())
        }
        if announceToClients, let names = SSL_load_client_CA_file(path) {
            SSL_CTX_set_client_CA_list(raw, names)
        }
        ERR_clear_error()
    }

    private static func requireReadable(_ path: String) throws(TLSError) {
        guard access(path, R_OK) == 0 else {
            throw .unreadableFile(path: path, reason: String(cString: strerror(errno)))
        }
    }
}

/// A server that also serves HTTP/1.1: "h2" when offered, else "http/1.1" when offered; a
/// client offering neither is refused with `no_application_protocol`.
private func selectHTTP2OrHTTP1(
    _ ssl: OpaquePointer?, _ selected: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ selectedLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32, _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    if selectHTTP2(ssl, selected, selectedLength, offered, offeredLength, argument) == SSL_TLSEXT_ERR_OK { return SSL_TLSEXT_ERR_OK }
    guard let offered, let selected, let selectedLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    let http1 = Array("http/1.1".utf8)
    var index = 0
    while index < Int(offeredLength) {
        let length = Int(offered[index])
        let start = index + 1
        guard start + length <= Int(offeredLength) else { break }
        if length == http1.count && Array(UnsafeBufferPointer(start: offered + start, count: length)) == http1 {
            TLSEngine.owning(ssl)?.alpnRefusal = nil
            selected.pointee = offered + start
            selectedLength.pointee = UInt8(length)
            return SSL_TLSEXT_ERR_OK
        }
        index = start + length
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL
}

/// ALPN's wire form of the one protocol offered: length-prefixed "h2".
private let alpnHTTP2: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]

/// The server's ALPN choice: "h2" when the client offers it; otherwise the handshake fails
/// with a `no_application_protocol` alert, and the engine learns what was offered instead.
private func selectHTTP2(
    _ ssl: OpaquePointer?, _ selected: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ selectedLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32, _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let offered, let selected, let selectedLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    var names: [String] = []
    var index = 0
    let end = Int(offeredLength)
    while index < end {
        let length = Int(offered[index])
        let start = index + 1
        guard start + length <= end else { break }
        if length == 2 && offered[start] == UInt8(ascii: "h") && offered[start + 1] == UInt8(ascii: "2") {
            selected.pointee = offered + start
            selectedLength.pointee = 2
            return SSL_TLSEXT_ERR_OK
        }
        names.append(String(decoding: UnsafeBufferPointer(start: offered + start, count: length), as: UTF8.self))
        index = start + length
    }
    TLSEngine.owning(ssl)?.alpnRefusal = "the client offered \(names.map { "\"\($0)\"" }.joined(separator: ", ")), not h2"
    return SSL_TLSEXT_ERR_ALERT_FATAL
}

/// A client that offers no ALPN at all cannot be speaking gRPC: refuse it in the handshake
/// (the ALPN callback is not called for it) with a `no_application_protocol` alert.
private func rejectClientHelloWithoutALPN(
    _ ssl: OpaquePointer?, _ alert: UnsafeMutablePointer<Int32>?, _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    var extensionData: UnsafePointer<UInt8>?
    var extensionLength = 0
    let offered = SSL_client_hello_get0_ext(
        ssl, UInt32(TLSEXT_TYPE_application_layer_protocol_negotiation), &extensionData, &extensionLength
    )
    guard offered == 1 else {
        TLSEngine.owning(ssl)?.alpnRefusal = "the client offered no ALPN protocol"
        alert?.pointee = Int32(TLS1_AD_NO_APPLICATION_PROTOCOL)
        return SSL_CLIENT_HELLO_ERROR
    }
    return SSL_CLIENT_HELLO_SUCCESS
}
