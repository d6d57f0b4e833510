import Foundation
import PitlaneCore
import PitlaneHTTP2
import PitlaneInterop
import TestSupport
import Testing

/// gRPC's interop test cases, judged by Python grpcio (gRPC C-core) both ways: grpcio's
/// client against Pitlane's TestService, Pitlane's client against grpcio's TestService, and
/// Pitlane against itself; over TCP, Unix sockets and TLS, in process and through the
/// executables.
@Suite("gRPC interop cases against grpcio", .serialized, .timeLimit(.minutes(5)))
struct InteropTests {
    static let repositoryRoot = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = repositoryRoot.appending(path: ".venv/bin/python").path
    static let peer = repositoryRoot.appending(path: "Tests/Peers/interop_peer.py").path
    static let protos = repositoryRoot.appending(path: "Sources/PitlaneInterop/Protos").path
    static let allPassed = "cases: \(InteropTestCase.allCases.count) ok, 0 failed"

    /// Where a server listens, and how a client finds it.
    enum Endpoint: CustomTestStringConvertible, Sendable {
        case tcp
        case unixSocket

        var testDescription: String { self == .tcp ? "TCP" : "a Unix socket" }
    }

    @Test("grpcio's client runs every case against Pitlane's TestService", arguments: [Endpoint.tcp, .unixSocket])
    func grpcioClientToPitlaneServer(_ endpoint: Endpoint) async throws {
        try await withPitlaneServer(endpoint) { address in
            let output = try await runProcess(Self.python, [Self.peer, "client", "--protos", Self.protos] + Self.peerFlags(address))
            #expect(output.output.contains(Self.allPassed), "\(output.output)")
        }
    }

    @Test("Pitlane's client runs every case against grpcio's TestService", arguments: [Endpoint.tcp, .unixSocket])
    func pitlaneClientToGrpcioServer(_ endpoint: Endpoint) async throws {
        try await withTemporaryDirectory { directory in
            let socketPath = "\(directory)/interop.sock"
            let addressFlags = endpoint == .tcp ? [] : ["--unix_socket", socketPath]
            let server = try await ServerProcess.start(Self.python, [Self.peer, "server", "--protos", Self.protos] + addressFlags)
            let target: HTTP2ClientTransport.Target =
                endpoint == .tcp
                ? .ipv4(host: "127.0.0.1", port: server.port) : .unixDomainSocket(path: socketPath)
            let outcomes = await Self.runCases(against: target)
            await Self.stop(server)
            Self.expectAllPassed(try outcomes.get())
        }
    }

    @Test("Pitlane's client runs every case against Pitlane's TestService", arguments: [Endpoint.tcp, .unixSocket])
    func pitlaneToPitlane(_ endpoint: Endpoint) async throws {
        try await withPitlaneServer(endpoint) { address in
            Self.expectAllPassed(try await InteropClient.run(InteropTestCase.allCases, against: Self.target(address)))
        }
    }

    @Test("over TLS: grpcio's client against Pitlane's TestService, Pitlane's client against grpcio's")
    func tls() async throws {
        try await withTestCertificates { certificates in
            let security = HTTP2ServerTransport.Security.tls(
                .init(
                    certificateChainPath: certificates.serverCertificatePath, privateKeyPath: certificates.serverKeyPath
                ))
            try await withPitlaneServer(.tcp, security: security) { address in
                let output = try await runProcess(
                    Self.python,
                    [
                        Self.peer, "client", "--protos", Self.protos, "--ca_file", certificates.caPath,
                        "--server_host_override", "localhost",
                    ] + Self.peerFlags(address))
                #expect(output.output.contains(Self.allPassed), "\(output.output)")
            }

            let server = try await ServerProcess.start(
                Self.python,
                [
                    Self.peer, "server", "--protos", Self.protos,
                    "--tls_cert_file", certificates.serverCertificatePath, "--tls_key_file", certificates.serverKeyPath,
                ])
            let outcomes = await Self.runCases(
                against: .ipv4(host: "127.0.0.1", port: server.port),
                security: .tls(.init(trustRootsPath: certificates.caPath, serverHostnameOverride: "localhost"))
            )
            await Self.stop(server)
            Self.expectAllPassed(try outcomes.get())
        }
    }

    @Test(
        "the executables: grpcio's client against pitlane-interop-server, pitlane-interop-client against grpcio's server",
        arguments: [Endpoint.tcp, .unixSocket])
    func executables(_ endpoint: Endpoint) async throws {
        try await withTemporaryDirectory { directory in
            let socketPath = "\(directory)/interop.sock"
            let serverFlags = endpoint == .tcp ? ["--port=0", "--host=127.0.0.1"] : ["--unix_socket=\(socketPath)"]
            let server = try await ServerProcess.start(try Self.product("pitlane-interop-server"), serverFlags)
            let peerFlags = endpoint == .tcp ? ["--port", String(server.port)] : ["--unix_socket", socketPath]
            let fromGrpcio = try await runProcess(Self.python, [Self.peer, "client", "--protos", Self.protos] + peerFlags)
            await Self.stop(server)
            #expect(fromGrpcio.status == 0)
            #expect(fromGrpcio.output.contains(Self.allPassed), "\(fromGrpcio.output)")
            try? FileManager.default.removeItem(atPath: socketPath)

            let grpcioServer = try await ServerProcess.start(
                Self.python, [Self.peer, "server", "--protos", Self.protos] + (endpoint == .tcp ? [] : ["--unix_socket", socketPath])
            )
            let clientFlags =
                endpoint == .tcp
                ? ["--server_host=127.0.0.1", "--server_port=\(grpcioServer.port)"] : ["--server_host=unix:\(socketPath)"]
            let toGrpcio = try await runProcess(try Self.product("pitlane-interop-client"), clientFlags + ["--test_case=all_cases"])
            await Self.stop(grpcioServer)
            #expect(toGrpcio.status == 0)
            #expect(toGrpcio.output.contains(Self.allPassed), "\(toGrpcio.output)")
        }
    }

    @Test("the executables over TLS, as gRPC's interop runner starts them")
    func executablesOverTLS() async throws {
        try await withTestCertificates { certificates in
            let server = try await ServerProcess.start(
                try Self.product("pitlane-interop-server"),
                [
                    "--port=0", "--host=127.0.0.1", "--use_tls=true",
                    "--tls_cert_file=\(certificates.serverCertificatePath)", "--tls_key_file=\(certificates.serverKeyPath)",
                ])
            let client = try await runProcess(
                try Self.product("pitlane-interop-client"),
                [
                    "--server_host=127.0.0.1", "--server_port=\(server.port)", "--test_case=all_cases",
                    "--use_tls=true", "--use_test_ca=true", "--ca_file=\(certificates.caPath)", "--server_host_override=localhost",
                ])
            await Self.stop(server)
            #expect(client.status == 0)
            #expect(client.output.contains(Self.allPassed), "\(client.output)")
        }
    }

    @Test("TestService over Connect and gRPC-Web, on the same port: curl with JSON (HTTP/1.1), a gRPC-Web frame (HTTP/2)")
    func webProtocols() async throws {
        let server = try await ServerProcess.start(try Self.product("pitlane-interop-server"), ["--port=0", "--host=127.0.0.1"])
        let url = "http://127.0.0.1:\(server.port)/grpc.testing.TestService/UnaryCall"
        let connect = try await runProcess(
            "/usr/bin/curl",
            [
                "-sS", "--http1.1", "-H", "content-type: application/json", "-d", #"{"responseSize": 3, "fillUsername": false}"#, url,
            ])
        #expect(connect.status == 0 && connect.output.contains(#""payload":{"body":"AAAA"}"#), "\(connect.output)")
        // An empty message in a gRPC-Web frame; the answer ends with the trailers frame.
        let empty = try await runProcess(
            "/bin/sh",
            [
                "-c",
                """
                printf '\\000\\000\\000\\000\\000' | /usr/bin/curl -sS --http2-prior-knowledge \
                    -H 'content-type: application/grpc-web+proto' --data-binary @- \
                    http://127.0.0.1:\(server.port)/grpc.testing.TestService/EmptyCall | tr -d '\\000\\200\\005\\021'
                """,
            ])
        #expect(empty.output.contains("grpc-status: 0"), "\(empty.output)")
        await Self.stop(server)
    }

    @Test("the executables say what is wrong with their flags, with exit status 2")
    func usageErrors() async throws {
        let server = try await runProcess(try Self.product("pitlane-interop-server"), ["--port=0", "--use_tls=true"])
        #expect(server.status == 2)
        #expect(server.output.contains("--use_tls=true needs --tls_cert_file and --tls_key_file"), "\(server.output)")
        let client = try await runProcess(
            try Self.product("pitlane-interop-client"),
            [
                "--server_host=127.0.0.1", "--server_port=1", "--test_case=empty_unary", "--use_tls=true", "--use_test_ca=true",
            ])
        #expect(client.status == 2)
        #expect(client.output.contains("--use_test_ca=true needs --ca_file"), "\(client.output)")
        let unknown = try await runProcess(try Self.product("pitlane-interop-client"), ["--server_port=1", "--test_case=no_such_case"])
        #expect(unknown.status == 2)
        #expect(unknown.output.contains("no test case no_such_case"), "\(unknown.output)")
    }

    // MARK: Helpers

    /// Runs `body` while an in-process Pitlane interop server listens on the endpoint.
    func withPitlaneServer(
        _ endpoint: Endpoint, security: HTTP2ServerTransport.Security = .plaintext,
        _ body: (HTTP2ServerTransport.Address) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let address: HTTP2ServerTransport.Address =
                endpoint == .tcp
                ? .ipv4(host: "127.0.0.1", port: 0) : .unixDomainSocket(path: "\(directory)/interop.sock")
            let server = InteropServer.make(address: address, security: security)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.serve() }
                defer { server.beginGracefulShutdown() }
                let bound = try await server.listeningAddress
                switch address {
                case .unixDomainSocket: try await body(address)
                default: try await body(.ipv4(host: "127.0.0.1", port: try #require(bound.port)))
                }
            }
        }
    }

    /// Every case from Pitlane's client, its failure to run as a result.
    static func runCases(
        against target: HTTP2ClientTransport.Target, security: HTTP2ClientTransport.Security = .plaintext
    ) async -> Result<[InteropClient.Outcome], any Error> {
        do {
            return .success(try await InteropClient.run(InteropTestCase.allCases, against: target, security: security))
        } catch {
            return .failure(error)
        }
    }

    /// Stops a server process at once: SIGKILL, because a child started from a thread of the
    /// concurrency pool inherits its blocked signals, SIGTERM among them.
    static func stop(_ server: ServerProcess) async {
        await server.stop(signal: SIGKILL)
    }

    static func target(_ address: HTTP2ServerTransport.Address) -> HTTP2ClientTransport.Target {
        switch address {
        case .unixDomainSocket(let path): .unixDomainSocket(path: path)
        case .ipv4(let host, let port): .ipv4(host: host, port: port)
        case .ipv6(let host, let port): .ipv6(host: host, port: port)
        }
    }

    /// The Python peer's flags for reaching a server at `address`.
    static func peerFlags(_ address: HTTP2ServerTransport.Address) -> [String] {
        switch address {
        case .unixDomainSocket(let path): ["--unix_socket", path]
        case .ipv4(_, let port), .ipv6(_, let port): ["--port", String(port)]
        }
    }

    static func expectAllPassed(_ outcomes: [InteropClient.Outcome], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcomes.map(\.testCase) == InteropTestCase.allCases, sourceLocation: sourceLocation)
        for outcome in outcomes {
            #expect(outcome.failure == nil, "\(outcome)", sourceLocation: sourceLocation)
        }
    }

    /// A built executable of this package: beside the test bundle, or under .build/debug.
    static func product(_ name: String) throws -> String {
        let candidates = [
            URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent().appending(path: name).path,
            repositoryRoot.appending(path: ".build/debug/\(name)").path,
        ]
        guard let found = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw ProductMissing(description: "\(name) is not built (looked at \(candidates)); run swift build")
        }
        return found
    }

    struct ProductMissing: Error, CustomStringConvertible {
        let description: String
    }
}
