import COpenSSL
import Glibc

/// One connection's TLS: an OpenSSL `SSL` whose records pass through two bounded buffers
/// (a BIO pair) instead of the socket, so the connection's event loop decides when to read
/// and write, and the socket stays non-blocking.
///
/// Ciphertext goes from the socket straight into the input buffer (``readCiphertext(from:)``)
/// and from the output buffer straight to the socket (``writeCiphertext(to:)``), without
/// copies; ``advanceHandshake()``, ``readPlaintext(into:)`` and ``writePlaintext(_:)`` work
/// between the buffers. Loop-confined, like the connection that owns it.
package final class TLSEngine {
    /// The connection's TLS lifecycle.
    package enum State: Equatable {
        case handshaking
        /// Handshake done, ALPN "h2" agreed: application data flows.
        case established
        /// close_notify received or sent.
        case closed
        /// A fatal error; only the alert OpenSSL queued (if any) is still to be written.
        case failed
    }

    /// How far ``advanceHandshake()`` got.
    package enum HandshakeProgress {
        case completed
        /// More ciphertext from the peer is needed.
        case needsCiphertext
        /// The output buffer is full: write it out, then advance again.
        case needsFlush
        case failed(TLSError)
    }

    /// What ``readPlaintext(into:)`` found.
    package enum PlaintextRead {
        case bytes(Int)
        case needsCiphertext
        /// The output buffer is full (OpenSSL has something to answer): write it out first.
        case needsFlush
        /// The peer sent close_notify.
        case closedByPeer
        case failed(TLSError)
    }

    /// What ``readCiphertext(from:)`` did.
    package enum CiphertextRead {
        case received(Int)
        case wouldBlock
        case endOfStream
        /// The input buffer holds more than a whole record: decrypt before reading more.
        case bufferFull
    }

    /// The name a client expects in the server's certificate.
    package enum ServerName: Equatable {
        /// Checked against the certificate's DNS names, and sent as SNI.
        case hostname(String)
        /// Checked against the certificate's IP addresses; no SNI (RFC 6066 forbids IPs there).
        case ipAddress(String)

        /// An IP address when `name` parses as one (brackets allowed around IPv6), else a host name.
        package init(_ name: String) {
            let bare = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
            var v4 = in_addr()
            var v6 = in6_addr()
            if inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1 {
                self = .ipAddress(bare)
            } else {
                self = .hostname(name)
            }
        }
    }

    /// Each direction's buffer: room for several 16 KiB records, so one socket write carries
    /// several, and bounded, so a fast writer cannot grow it.
    package static let bufferBytes = 64 * 1024

    package private(set) var state = State.handshaking
    /// Server: why ALPN refused the client, set by the context's callbacks during the handshake.
    var alpnRefusal: String?
    private let ssl: OpaquePointer
    /// The connection's end of the BIO pair; OpenSSL owns the other end through `ssl`.
    private let network: OpaquePointer
    private let role: TLSContext.Role
    /// Server: whether "http/1.1", or no ALPN at all, completes the handshake as well as "h2".
    private let acceptsHTTP1: Bool

    /// Takes ownership of `ssl`.
    package init(ssl: OpaquePointer, role: TLSContext.Role, serverName: ServerName?, acceptsHTTP1: Bool = false) throws(TLSError) {
        self.acceptsHTTP1 = acceptsHTTP1
        var inner: OpaquePointer?
        var outer: OpaquePointer?
        guard BIO_new_bio_pair(&inner, Self.bufferBytes, &outer, Self.bufferBytes) == 1, let inner, let outer else {
            SSL_free(ssl)
            throw .invalidConfiguration(reason: "BIO_new_bio_pair failed: \(takeOpenSSLErrors())")
        }
        SSL_set_bio(ssl, inner, inner)
        self.ssl = ssl
        self.network = outer
        self.role = role
        // The context's callbacks find the engine through the SSL's application data.
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
        switch role {
        case .server:
            SSL_set_accept_state(ssl)
        case .client:
            SSL_set_connect_state(ssl)
            switch serverName {
            case .hostname(let name):
                guard setServerNameIndication(ssl, name), SSL_set1_host(ssl, name) == 1 else {
                    throw .invalidConfiguration(reason: "cannot expect server name \"\(name)\": \(takeOpenSSLErrors())")
                }
            case .ipAddress(let address):
                guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), address) == 1 else {
                    throw .invalidConfiguration(reason: "cannot expect server address \(address): \(takeOpenSSLErrors())")
                }
            case nil:
                break
            }
        }
    }

    deinit {
        SSL_free(ssl)
        BIO_free(network)
    }

    // MARK: Protocol

    /// Runs the handshake as far as the ciphertext at hand allows. On completion checks that
    /// ALPN agreed on "h2".
    package func advanceHandshake() -> HandshakeProgress {
        guard state == .handshaking else { return .failed(.handshakeFailed(reason: "the handshake is over")) }
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            if let problem = alpnProblem() {
                state = .failed
                return .failed(.http2NotNegotiated(reason: problem))
            }
            state = .established
            return .completed
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .needsCiphertext
        case SSL_ERROR_WANT_WRITE: return .needsFlush
        case SSL_ERROR_ZERO_RETURN:
            state = .failed
            return .failed(.handshakeFailed(reason: "the peer closed the connection (close_notify)"))
        default:
            state = .failed
            if let refusal = alpnRefusal {
                ERR_clear_error()
                return .failed(.http2NotNegotiated(reason: refusal))
            }
            return .failed(.handshakeFailed(reason: failureReason()))
        }
    }

    /// The engine of an SSL made by ``TLSContext/makeEngine(serverName:)``, for callbacks.
    static func owning(_ ssl: OpaquePointer?) -> TLSEngine? {
        guard let ssl, let engine = SSL_get_ex_data(ssl, 0) else { return nil }
        return Unmanaged<TLSEngine>.fromOpaque(engine).takeUnretainedValue()
    }

    /// Decrypts one record's worth (at most `buffer.count` bytes) of application data.
    package func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) -> PlaintextRead {
        guard state == .established else { return state == .closed ? .closedByPeer : .failed(.connectionFailed(reason: "not established")) }
        ERR_clear_error()
        var count = 0
        let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if result == 1 { return .bytes(count) }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .needsCiphertext
        case SSL_ERROR_WANT_WRITE: return .needsFlush
        case SSL_ERROR_ZERO_RETURN:
            state = .closed
            return .closedByPeer
        default:
            state = .failed
            return .failed(.connectionFailed(reason: failureReason()))
        }
    }

    /// Encrypts as much of `plaintext` as the output buffer has room for, in whole records;
    /// returns how many bytes it took (0 when the buffer is full: write it out first). Offer
    /// the rest again, unchanged, from any buffer.
    package func writePlaintext(_ plaintext: UnsafeRawBufferPointer) throws(TLSError) -> Int {
        guard state == .established else { throw .connectionFailed(reason: "writing while \(state)") }
        guard !plaintext.isEmpty else { return 0 }
        ERR_clear_error()
        var written = 0
        let result = SSL_write_ex(ssl, plaintext.baseAddress, plaintext.count, &written)
        if result == 1 { return written }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ: return 0
        default:
            state = .failed
            throw .connectionFailed(reason: failureReason())
        }
    }

    /// Queues close_notify, once, for ``writeCiphertext(to:)``; nothing unless the handshake
    /// completed and nothing failed.
    package func shutdown() {
        guard state == .established || state == .closed else { return }
        ERR_clear_error()
        if SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN == 0 { _ = SSL_shutdown(ssl) }
        ERR_clear_error()
        state = .closed
    }

    // MARK: Ciphertext and the socket

    /// Ciphertext OpenSSL produced that is not written yet.
    package var hasPendingCiphertext: Bool { BIO_ctrl_pending(network) > 0 }

    /// Reads from `socket` straight into the input buffer.
    package func readCiphertext(from socket: Socket) throws(SocketError) -> CiphertextRead {
        var space: UnsafeMutablePointer<CChar>?
        let room = BIO_nwrite0(network, &space)
        guard room > 0, let start = space else { return .bufferFull }
        guard let count = try socket.read(into: UnsafeMutableRawBufferPointer(start: start, count: Int(room))) else {
            return .wouldBlock
        }
        guard count > 0 else { return .endOfStream }
        _ = BIO_nwrite(network, &space, Int32(count))
        return .received(count)
    }

    /// Writes pending ciphertext to `socket` straight from the output buffer; true when all
    /// of it went, false when the socket is full.
    package func writeCiphertext(to socket: Socket) throws(SocketError) -> Bool {
        while true {
            var bytes: UnsafeMutablePointer<CChar>?
            let available = BIO_nread0(network, &bytes)
            guard available > 0, let start = bytes else { return true }
            guard let written = try socket.write(UnsafeRawBufferPointer(start: start, count: Int(available))), written > 0 else {
                return false
            }
            _ = BIO_nread(network, &bytes, Int32(written))
            if written < available { return false }
        }
    }

    // MARK: Diagnostics

    /// Why the last operation failed: a certificate that did not verify says why (e.g.
    /// "certificate verify failed: hostname mismatch"), an alert says which.
    private func failureReason() -> String {
        let errors = takeOpenSSLErrors(fallback: "the connection failed")
        let verification = SSL_get_verify_result(ssl)
        guard verification != X509_V_OK else { return errors }
        return "\(errors): \(String(cString: X509_verify_cert_error_string(verification)))"
    }

    /// The protocol ALPN settled on ("h2", "http/1.1"), empty when none was negotiated.
    package var negotiatedProtocol: String {
        var selected: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &length)
        return selected.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) } ?? ""
    }

    /// Whether the connection speaks HTTP/1.1 (a server that serves it, and a client that
    /// did not choose "h2").
    package var speaksHTTP1: Bool { negotiatedProtocol != "h2" }

    /// Why ALPN did not agree on "h2", or nil when it did (or, on a server that serves
    /// HTTP/1.1 too, on "http/1.1" or on nothing).
    private func alpnProblem() -> String? {
        let chosen = negotiatedProtocol
        if chosen == "h2" || (role == .server && acceptsHTTP1 && (chosen == "http/1.1" || chosen.isEmpty)) { return nil }
        switch role {
        case .client: return chosen.isEmpty ? "the server selected no protocol" : "the server selected \"\(chosen)\""
        case .server: return "the client did not offer h2"
        }
    }
}
