import PitlaneCore
import PitlaneHTTP2
import PitlaneWeb
import TestSupport
import Testing

/// HTTP/1.1 beside HTTP/2 on a TLS port: ALPN picks the version the web protocols serve.
@Suite("Web protocols over TLS", .timeLimit(.minutes(3)))
struct WebTLSTests {
    static let tlsProbe = Peers.script("tls_probe.py")

    @Test("HTTP/1.1 over TLS: ALPN http/1.1 (or none) gets HTTP/1.1, h2 is still preferred; curl calls Connect over both")
    func http1OverTLS() async throws {
        try await withTestCertificates { certificates in
            let failures = Locked<[TLSError]>([])
            try await Self.withEchoServer(security: .tls(Self.serverTLS(certificates)), config: Self.recording(failures)) { address in
                let port = String(try #require(address.port))
                for (offer, chosen) in [("http/1.1", "accepted http/1.1"), ("none", "accepted None"), ("http/1.1,h2", "accepted h2")] {
                    let output = try await runProcess(
                        Peers.python, [Self.tlsProbe, "--port", port, "--ca", certificates.caPath, "--alpn", offer]
                    ).output
                    #expect(output.hasPrefix(chosen), "offering \(offer): \(output)")
                }
                for version in ["--http1.1", "--http2"] {
                    let (status, output) = try await runProcess(
                        "/usr/bin/curl",
                        [
                            "-sS", version, "--cacert", certificates.caPath, "--resolve", "localhost:\(port):127.0.0.1",
                            "-H", "content-type: application/json", "-d", #"{"text": "over TLS"}"#,
                            "https://localhost:\(port)/pitlane.test.echo.Echo/Get",
                        ])
                    #expect(status == 0 && output.contains(#""text":"over TLS""#), "\(version): \(output)")
                }
                #expect(failures.value.isEmpty, "\(failures.value)")
            }
        }
    }

    static func serverTLS(_ certificates: TestCertificates) -> HTTP2ServerTransport.TLSConfig {
        HTTP2ServerTransport.TLSConfig(
            certificateChainPath: certificates.serverCertificatePath, privateKeyPath: certificates.serverKeyPath,
            trustRootsPath: certificates.caPath
        )
    }

    /// A server that serves the web protocols and records failed TLS handshakes.
    static func recording(_ failures: Locked<[TLSError]>) -> HTTP2ServerTransport.Config {
        var config = HTTP2ServerTransport.Config.defaults
        config.web = WebConfig()
        config.connection.onTLSHandshakeFailure = { _, error in failures.withLock { $0.append(error) } }
        return config
    }

    /// Runs the echo service for the length of `body`.
    static func withEchoServer(
        security: HTTP2ServerTransport.Security, config: HTTP2ServerTransport.Config, _ body: (SocketAddress) async throws -> Void
    ) async throws {
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), security: security, config: config),
            services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await body(try await server.listeningAddress)
        }
    }
}
