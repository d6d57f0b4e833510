import COpenSSL
import Testing

@Suite("OpenSSL through COpenSSL", .timeLimit(.minutes(5)))
struct OpenSSLTests {
    @Test("a TLS client context offers ALPN h2 and an SSL object inherits it")
    func contextWithALPN() throws {
        let context = try #require(SSL_CTX_new(TLS_client_method()))
        defer { SSL_CTX_free(context) }

        // ALPN protocol lists are length-prefixed: "\x02h2". SSL_CTX_set_alpn_protos returns 0 on success.
        let protocols: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        #expect(SSL_CTX_set_alpn_protos(context, protocols, UInt32(protocols.count)) == 0)
        #expect(SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil) == 1)

        let connection = try #require(SSL_new(context))
        defer { SSL_free(connection) }
        #expect(minimumProtocolVersion(of: connection) == TLS1_2_VERSION)
        #expect(OpenSSL_version_num() >= 0x3000_0000)
    }
}

/// `SSL_get_min_proto_version`, a C macro over `SSL_ctrl` that Swift does not import.
private func minimumProtocolVersion(of ssl: OpaquePointer) -> Int32 {
    Int32(SSL_ctrl(ssl, SSL_CTRL_GET_MIN_PROTO_VERSION, 0, nil))
}
