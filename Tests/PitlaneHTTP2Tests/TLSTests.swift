import Foundation
import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// TLS and mutual TLS over real sockets on 127.0.0.1, with certificates each test makes with
/// the openssl command: against grpcio both ways, Pitlane to Pitlane, and the failures a
/// client or server must turn away cleanly.
@Suite("HTTP/2 transport over TLS", .timeLimit(.minutes(5)))
struct TLSTests {
    typealias Echo = Pitlane_Test_Echo_Echo.Client<HTTP2ClientTransport>

    static let tlsProbe = GRPCPeerTests.repositoryRoot.appending(path: "Tests/Peers/tls_probe.py").path

    // MARK: Against grpcio

    @Test("a grpcio client calls a Pitlane TLS server: all 13 checks", arguments: [false, true])
    func grpcioClientToPitlaneServer(mutual: Bool) async throws {
        try await withTestCertificates { certificates in
            var tls = Self.serverTLS(certificates)
            if mutual { tls.clientCertificateVerification = .required }
            try await Self.withEchoServer(security: .tls(tls), config: .defaults.with { $0.eventLoops.threads = 2 }) { address in
                var arguments = [
                    GRPCPeerTests.peer, "client", "--port", String(try #require(address.port)),
                    "--protos", GRPCPeerTests.protos, "--tls-ca", certificates.caPath,
                    "--server-name-override", "localhost",
                ]
                if mutual { arguments += ["--tls-cert", certificates.clientCertificatePath, "--tls-key", certificates.clientKeyPath] }
                let output = try await GRPCPeerTests.run(arguments)
                #expect(output.contains("checks: 13 ok, 0 failed"), "\(output)")
            }
        }
    }

    @Test("a Pitlane TLS client calls a grpcio TLS server: the echo exercise", arguments: [false, true])
    func pitlaneClientToGrpcioServer(mutual: Bool) async throws {
        try await withTestCertificates { certificates in
            var arguments = [
                GRPCPeerTests.peer, "server", "--protos", GRPCPeerTests.protos,
                "--tls-cert", certificates.serverCertificatePath, "--tls-key", certificates.serverKeyPath,
            ]
            if mutual { arguments += ["--tls-ca", certificates.caPath, "--require-client-cert"] }
            let server = try await PythonServer.start(arguments: arguments)
            var tls = HTTP2ClientTransport.TLSConfig(trustRootsPath: certificates.caPath)
            if mutual {
                tls.certificateChainPath = certificates.clientCertificatePath
                tls.privateKeyPath = certificates.clientKeyPath
            }
            await #expect(throws: Never.self) {
                try await Self.withEcho(port: server.port, tls: tls) { try await GRPCPeerTests.exerciseEcho($0) }
            }
            await server.stop()
        }
    }

    // MARK: Pitlane to Pitlane

    @Test("a Pitlane TLS client calls a Pitlane TLS server over TCP and a Unix socket")
    func pitlaneToPitlane() async throws {
        try await withTestCertificates { certificates in
            let socketPath = "\(certificates.directory)/tls.sock"
            for address in [HTTP2ServerTransport.Address.ipv4(host: "127.0.0.1", port: 0), .unixDomainSocket(path: socketPath)] {
                try await Self.withEchoServer(address: address, security: .tls(Self.serverTLS(certificates))) { bound in
                    // An IP target checks the certificate's IP address; a Unix socket, "localhost".
                    let target: HTTP2ClientTransport.Target =
                        switch address {
                        case .unixDomainSocket(let path): .unixDomainSocket(path: path)
                        default: .ipv4(host: "127.0.0.1", port: try #require(bound.port))
                        }
                    let transport = try HTTP2ClientTransport(target: target, security: .tls(.init(trustRootsPath: certificates.caPath)))
                    try await withGRPCClient(transport: transport) { client in
                        try await GRPCPeerTests.exerciseEcho(Echo(wrapping: client))
                    }
                }
            }
        }
    }

    @Test("large messages and streams over TLS: 4 MB each way, 1 MB responses, 200 bidirectional messages")
    func largeMessagesAndStreaming() async throws {
        try await withTestCertificates { certificates in
            var serverConfig = HTTP2ServerTransport.Config.defaults
            serverConfig.rpc.maxMessageBytes = 8 << 20
            serverConfig.eventLoops.threads = 1
            try await Self.withEchoServer(security: .tls(Self.serverTLS(certificates)), config: serverConfig) { address in
                var clientConfig = HTTP2ClientTransport.Config.defaults
                clientConfig.maxMessageBytes = 8 << 20
                let transport = try HTTP2ClientTransport(
                    target: .ipv4(host: "127.0.0.1", port: try #require(address.port)),
                    security: .tls(.init(trustRootsPath: certificates.caPath, serverHostnameOverride: "localhost")), config: clientConfig
                )
                try await withGRPCClient(transport: transport) { client in
                    try await Self.exerciseLargeMessages(Echo(wrapping: client))
                }
            }
        }
    }

    static func exerciseLargeMessages(_ echo: Echo) async throws {
        let text = String(repeating: "0123456789abcdef", count: 4_000_000 / 16)
        #expect(try await echo.get(.with { $0.text = text }).text == text)
        let sizes = try await echo.expand(
            .with {
                $0.repeat = 8
                $0.payloadBytes = 1 << 20
            }
        ) { response in
            var sizes: [Int] = []
            for try await message in response.messages { sizes.append(message.payload.count) }
            return sizes
        }
        #expect(sizes == Array(repeating: 1 << 20, count: 8))
        let chunk = String(repeating: "x", count: 64 * 1024)
        let texts = try await echo.update { writer in
            for index in 0..<200 { try await writer.write(.with { $0.text = "\(index)" + chunk }) }
        } onResponse: { response in
            var texts: [String] = []
            for try await message in response.messages { texts.append(message.text) }
            return texts
        }
        #expect(texts == (0..<200).map { "\($0)" + chunk })
    }

    // MARK: Mutual TLS

    @Test("mutual TLS required: no certificate fails, a stranger's fails, the CA's client certificate works")
    func mutualTLSRequired() async throws {
        try await withTestCertificates { certificates in
            let failures = Locked<[TLSError]>([])
            var tls = Self.serverTLS(certificates)
            tls.clientCertificateVerification = .required
            try await Self.withEchoServer(security: .tls(tls), config: Self.recording(failures)) { address in
                let port = try #require(address.port)
                let anonymous = try await Self.failure(port: port, tls: .init(trustRootsPath: certificates.caPath))
                #expect(anonymous?.code == .unavailable)
                #expect(anonymous?.message.contains("certificate") == true, "\(String(describing: anonymous))")

                let stranger = try await Self.failure(port: port, tls: Self.clientTLS(certificates, stranger: true))
                #expect(stranger?.code == .unavailable, "\(String(describing: stranger))")

                try await Self.expectEcho(port: port, tls: Self.clientTLS(certificates))
                #expect(failures.value.count >= 2, "\(failures.value)")
                #expect(failures.value.contains { "\($0)".contains("peer did not return a certificate") }, "\(failures.value)")
                #expect(failures.value.contains { "\($0)".contains("unable to get local issuer certificate") }, "\(failures.value)")
            }
        }
    }

    @Test("mutual TLS optional: with or without a certificate works; a stranger's certificate fails")
    func mutualTLSOptional() async throws {
        try await withTestCertificates { certificates in
            var tls = Self.serverTLS(certificates)
            tls.clientCertificateVerification = .optional
            try await Self.withEchoServer(security: .tls(tls), config: Self.recording(Locked([]))) { address in
                let port = try #require(address.port)
                try await Self.expectEcho(port: port, tls: .init(trustRootsPath: certificates.caPath))
                try await Self.expectEcho(port: port, tls: Self.clientTLS(certificates))
                let stranger = try await Self.failure(port: port, tls: Self.clientTLS(certificates, stranger: true))
                #expect(stranger?.code == .unavailable, "\(String(describing: stranger))")
            }
        }
    }

    // MARK: Verifying the server

    @Test("a server name that the certificate does not name fails with .unavailable and says why")
    func hostnameMismatch() async throws {
        try await withTestCertificates { certificates in
            try await Self.withEchoServer(security: .tls(Self.serverTLS(certificates)), config: Self.recording(Locked([]))) { address in
                let port = try #require(address.port)
                let wrongName = try await Self.failure(
                    port: port, tls: .init(trustRootsPath: certificates.caPath, serverHostnameOverride: "pit.example.com")
                )
                #expect(wrongName?.code == .unavailable)
                #expect(wrongName?.message.contains("hostname mismatch") == true, "\(String(describing: wrongName))")

                let wrongAddress = try await Self.failure(
                    port: port, tls: .init(trustRootsPath: certificates.caPath, serverHostnameOverride: "127.0.0.2")
                )
                #expect(wrongAddress?.code == .unavailable)
                #expect(wrongAddress?.message.contains("IP address mismatch") == true, "\(String(describing: wrongAddress))")

                try await Self.expectEcho(port: port, tls: .init(trustRootsPath: certificates.caPath, serverHostnameOverride: "localhost"))
            }
        }
    }

    @Test("a server whose CA the client does not trust fails with .unavailable and says why")
    func untrustedCA() async throws {
        try await withTestCertificates { certificates in
            try await Self.withEchoServer(security: .tls(Self.serverTLS(certificates)), config: Self.recording(Locked([]))) { address in
                let failure = try await Self.failure(
                    port: try #require(address.port), tls: .init(trustRootsPath: certificates.untrustedCAPath))
                #expect(failure?.code == .unavailable)
                #expect(failure?.message.contains("certificate verify failed") == true, "\(String(describing: failure))")
                #expect(failure?.message.contains("unable to get local issuer certificate") == true, "\(String(describing: failure))")
            }
        }
    }

    // MARK: Peers that do not speak TLS or HTTP/2

    @Test("a plaintext client against a TLS server fails cleanly; the server, on one loop, keeps serving")
    func plaintextClientAgainstTLSServer() async throws {
        try await withTestCertificates { certificates in
            let failures = Locked<[TLSError]>([])
            try await Self.withEchoServer(
                security: .tls(Self.serverTLS(certificates)), config: Self.recording(failures).with { $0.eventLoops.threads = 1 }
            ) { address in
                let port = try #require(address.port)
                let plaintext = try await Self.failure(port: port, tls: nil)
                #expect(plaintext?.code == .unavailable, "\(String(describing: plaintext))")
                // A silent TCP connection is open while TLS clients come and go.
                let silent = try Socket(for: .ipv4("127.0.0.1", port: port))
                _ = try silent.connect(to: .ipv4("127.0.0.1", port: port))
                defer { silent.close() }
                try await Self.expectEcho(port: port, tls: .init(trustRootsPath: certificates.caPath))
                #expect(!failures.value.isEmpty)
            }
        }
    }

    @Test("a TLS client against a plaintext server fails with .unavailable")
    func tlsClientAgainstPlaintextServer() async throws {
        try await withTestCertificates { certificates in
            try await Self.withEchoServer(security: .plaintext) { address in
                let failure = try await Self.failure(port: try #require(address.port), tls: .init(trustRootsPath: certificates.caPath))
                #expect(failure?.code == .unavailable, "\(String(describing: failure))")
            }
        }
    }

    @Test("a server that serves gRPC only turns away a TLS client that does not offer ALPN h2, in the handshake")
    func clientWithoutHTTP2IsRejected() async throws {
        try await withTestCertificates { certificates in
            let failures = Locked<[TLSError]>([])
            let config = Self.recording(failures)
            try await Self.withEchoServer(security: .tls(Self.serverTLS(certificates)), config: config) { address in
                let port = String(try #require(address.port))
                for offer in ["http/1.1", "none"] {
                    let output = try await runProcess(
                        GRPCPeerTests.python, [Self.tlsProbe, "--port", port, "--ca", certificates.caPath, "--alpn", offer]
                    ).output
                    #expect(output.hasPrefix("rejected"), "offering \(offer): \(output)")
                    #expect(output.contains("NO_APPLICATION_PROTOCOL") || output.contains("no application protocol"), "\(output)")
                }
                let accepted = try await runProcess(
                    GRPCPeerTests.python, [Self.tlsProbe, "--port", port, "--ca", certificates.caPath, "--alpn", "http/1.1,h2"]
                ).output
                #expect(accepted.hasPrefix("accepted h2"), "\(accepted)")
                #expect(failures.value.count == 2, "\(failures.value)")
                #expect(failures.value.allSatisfy { if case .http2NotNegotiated = $0 { true } else { false } }, "\(failures.value)")
            }
        }
    }

    @Test("a server that never answers the handshake fails the RPC with .unavailable after the handshake timeout")
    func silentServer() async throws {
        try await withTestCertificates { certificates in
            // A listener nobody accepts from: TCP connects, and then nothing ever answers.
            let silent = try Socket.listen(on: .ipv4("127.0.0.1", port: 0))
            defer { silent.close() }
            var config = HTTP2ClientTransport.Config.defaults
            config.tlsHandshakeTimeout = .milliseconds(200)
            let transport = try HTTP2ClientTransport(
                target: .ipv4(host: "127.0.0.1", port: try #require(try silent.localAddress.port)),
                security: .tls(.init(trustRootsPath: certificates.caPath)), config: config
            )
            try await withGRPCClient(transport: transport) { client in
                let error = await #expect(throws: RPCError.self) { try await Echo(wrapping: client).get(EchoRequest()) }
                #expect(error?.code == .unavailable)
                #expect(error?.message.contains("TLS handshake did not complete") == true, "\(String(describing: error))")
            }
        }
    }

    // MARK: Configuration errors

    @Test("missing or invalid certificate and key files are typed errors at listen")
    func serverConfigurationErrors() async throws {
        try await withTestCertificates { certificates in
            let garbage = "\(certificates.directory)/garbage.pem"
            try "not a certificate\n".write(toFile: garbage, atomically: true, encoding: .utf8)
            let missing = "\(certificates.directory)/missing.pem"
            let cases: [(HTTP2ServerTransport.TLSConfig, (TLSError) -> Bool)] = [
                (
                    .init(certificateChainPath: missing, privateKeyPath: certificates.serverKeyPath),
                    { if case .unreadableFile(missing, _) = $0 { true } else { false } }
                ),
                (
                    .init(certificateChainPath: garbage, privateKeyPath: certificates.serverKeyPath),
                    { if case .invalidCertificateChain(garbage, _) = $0 { true } else { false } }
                ),
                (
                    .init(certificateChainPath: certificates.serverCertificatePath, privateKeyPath: garbage),
                    { if case .invalidPrivateKey(garbage, _) = $0 { true } else { false } }
                ),
                (
                    .init(certificateChainPath: certificates.serverCertificatePath, privateKeyPath: certificates.clientKeyPath),
                    { if case .privateKeyMismatch = $0 { true } else { false } }
                ),
                (
                    .init(
                        certificateChainPath: certificates.serverCertificatePath, privateKeyPath: certificates.serverKeyPath,
                        clientCertificateVerification: .required, trustRootsPath: garbage),
                    { if case .invalidTrustRoots(garbage, _) = $0 { true } else { false } }
                ),
            ]
            for (tls, matches) in cases {
                let transport = HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), security: .tls(tls))
                let error = await #expect(throws: TLSError.self) { try await transport.listen { _, _ in } }
                #expect(error.map(matches) == true, "\(String(describing: error))")
                await #expect(throws: TLSError.self) { try await transport.listeningAddress }
            }
        }
    }

    @Test("missing or invalid client TLS files are typed errors when the transport is made")
    func clientConfigurationErrors() async throws {
        try await withTestCertificates { certificates in
            let garbage = "\(certificates.directory)/garbage.pem"
            try "not a certificate\n".write(toFile: garbage, atomically: true, encoding: .utf8)
            let missing = "\(certificates.directory)/missing.pem"
            let cases: [(HTTP2ClientTransport.TLSConfig, (TLSError) -> Bool)] = [
                (.init(trustRootsPath: missing), { if case .unreadableFile(missing, _) = $0 { true } else { false } }),
                (.init(trustRootsPath: garbage), { if case .invalidTrustRoots(garbage, _) = $0 { true } else { false } }),
                (
                    .init(trustRootsPath: certificates.caPath, certificateChainPath: certificates.clientCertificatePath),
                    { if case .invalidConfiguration = $0 { true } else { false } }
                ),
                (
                    .init(
                        trustRootsPath: certificates.caPath, certificateChainPath: certificates.clientCertificatePath,
                        privateKeyPath: certificates.serverKeyPath),
                    { if case .privateKeyMismatch = $0 { true } else { false } }
                ),
            ]
            for (tls, matches) in cases {
                let error = #expect(throws: TLSError.self) {
                    _ = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: 1), security: .tls(tls))
                }
                #expect(error.map(matches) == true, "\(String(describing: error))")
            }
            // Without trust roots the system's are used: setting up succeeds.
            _ = try HTTP2ClientTransport(target: .dns(host: "localhost", port: 1), security: .tls(.init()))
        }
    }

    // MARK: Helpers

    static func serverTLS(_ certificates: TestCertificates) -> HTTP2ServerTransport.TLSConfig {
        HTTP2ServerTransport.TLSConfig(
            certificateChainPath: certificates.serverCertificatePath, privateKeyPath: certificates.serverKeyPath,
            trustRootsPath: certificates.caPath
        )
    }

    static func clientTLS(_ certificates: TestCertificates, stranger: Bool = false) -> HTTP2ClientTransport.TLSConfig {
        HTTP2ClientTransport.TLSConfig(
            trustRootsPath: certificates.caPath,
            certificateChainPath: stranger ? certificates.strangerCertificatePath : certificates.clientCertificatePath,
            privateKeyPath: stranger ? certificates.strangerKeyPath : certificates.clientKeyPath
        )
    }

    /// A server config that records handshake failures instead of logging them.
    static func recording(_ failures: Locked<[TLSError]>) -> HTTP2ServerTransport.Config {
        .defaults.with { $0.connection.onTLSHandshakeFailure = { _, error in failures.withLock { $0.append(error) } } }
    }

    /// Runs the echo service on `address` for the length of `body`.
    static func withEchoServer(
        address: HTTP2ServerTransport.Address = .ipv4(host: "127.0.0.1", port: 0),
        security: HTTP2ServerTransport.Security,
        config: HTTP2ServerTransport.Config = .defaults,
        _ body: (SocketAddress) async throws -> Void
    ) async throws {
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: address, security: security, config: config), services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await body(try await server.listeningAddress)
        }
    }

    /// Runs `body` with an echo client for 127.0.0.1:`port`, plaintext when `tls` is nil.
    static func withEcho<T: Sendable>(port: Int, tls: HTTP2ClientTransport.TLSConfig?, _ body: (Echo) async throws -> T) async throws -> T {
        let security: HTTP2ClientTransport.Security = tls.map { .tls($0) } ?? .plaintext
        let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port), security: security)
        return try await withGRPCClient(transport: transport) { client in try await body(Echo(wrapping: client)) }
    }

    /// The error of a unary call that is expected to fail.
    static func failure(port: Int, tls: HTTP2ClientTransport.TLSConfig?) async throws -> RPCError? {
        try await withEcho(port: port, tls: tls) { echo in
            await #expect(throws: RPCError.self) { try await echo.get(.with { $0.text = "refused" }) }
        }
    }

    static func expectEcho(port: Int, tls: HTTP2ClientTransport.TLSConfig?) async throws {
        let text = try await withEcho(port: port, tls: tls) { echo in try await echo.get(.with { $0.text = "over TLS" }).text }
        #expect(text == "over TLS")
    }
}
