import COpenSSL

// Swift spellings of OpenSSL function-like macros, which Swift does not import; each is
// the macro's expansion from OpenSSL 3's headers.

/// `SSL_OP_NO_RENEGOTIATION` (`SSL_OP_BIT(30)`).
let sslOptionNoRenegotiation: UInt64 = 1 << 30
/// `SSL_OP_NO_COMPRESSION` (`SSL_OP_BIT(17)`).
let sslOptionNoCompression: UInt64 = 1 << 17

/// `SSL_CTX_set_min_proto_version`.
func setMinimumProtocolVersion(_ context: OpaquePointer, _ version: Int32) -> Bool {
    SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(version), nil) == 1
}

/// `SSL_CTX_set_mode`.
func addMode(_ context: OpaquePointer, _ mode: UInt32) {
    _ = SSL_CTX_ctrl(context, SSL_CTRL_MODE, Int(mode), nil)
}

/// `SSL_set_tlsext_host_name`: the SNI name a client sends.
func setServerNameIndication(_ ssl: OpaquePointer, _ name: String) -> Bool {
    name.withCString {
        SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)) == 1
    }
}

/// The reasons OpenSSL queued on this thread, oldest first, joined by "; " (e.g.
/// "certificate verify failed"), and the queue emptied; `fallback` when it was empty.
func takeOpenSSLErrors(fallback: String = "unknown OpenSSL error") -> String {
    var reasons: [String] = []
    while case let code = ERR_get_error(), code != 0 {
        if let reason = ERR_reason_error_string(code) {
            reasons.append(String(cString: reason))
        } else {
            reasons.append(
                withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
                    ERR_error_string_n(code, buffer.baseAddress, buffer.count)
                    return String(cString: buffer.baseAddress!)
                })
        }
    }
    return reasons.isEmpty ? fallback : reasons.joined(separator: "; ")
}
