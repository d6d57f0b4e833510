import Foundation
import PitlaneCore
import PitlaneHTTP2
import PitlaneInterop
import TestSupport
import Testing

/// gRPC's interop test cases, judged by Python grpcio (gRPC C-core) both ways: grpcio's
/// client against Pitlane's TestService, Pitlane's client against grpcio's TestService, and
/// Pitlane against itself; over TCP and Unix sockets, in process and through the executables.
@Suite("gRPC interop cases against grpcio", .serialized)
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
        let socketPath = temporarySocketPath("pitlane-interop-grpcio")
        defer { try? FileManager.default.removeItem(atPath: socketPath) }
        let addressFlags = endpoint == .tcp ? [] : ["--unix_socket", socketPath]
        let server = try await ListeningProcess.start(Self.python, [Self.peer, "server", "--protos", Self.protos] + addressFlags)
        let target: HTTP2ClientTransport.Target = endpoint == .tcp
            ? .ipv4(host: "127.0.0.1", port: server.port) : .unixDomainSocket(path: socketPath)
        let outcomes: [InteropClient.Outcome]
        do {
            outcomes = try await InteropClient.run(InteropTestCase.allCases, against: target) { print("\(endpoint.testDescription): \($0)") }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        Self.expectAllPassed(outcomes)
    }

    @Test("Pitlane's client runs every case against Pitlane's TestService", arguments: [Endpoint.tcp, .unixSocket])
    func pitlaneToPitlane(_ endpoint: Endpoint) async throws {
        try await withPitlaneServer(endpoint) { address in
            let target: HTTP2ClientTransport.Target = switch address {
            case .unixDomainSocket(let path): .unixDomainSocket(path: path)
            case .ipv4(let host, let port), .ipv6(let host, let port): .ipv4(host: host, port: port)
            }
            Self.expectAllPassed(try await InteropClient.run(InteropTestCase.allCases, against: target))
        }
    }

    @Test("the executables: grpcio's client against pitlane-interop-server, pitlane-interop-client against grpcio's server",
          arguments: [Endpoint.tcp, .unixSocket])
    func executables(_ endpoint: Endpoint) async throws {
        let socketPath = temporarySocketPath("pitlane-interop-executable")
        defer { try? FileManager.default.removeItem(atPath: socketPath) }

        let serverFlags = endpoint == .tcp ? ["--port=0", "--host=127.0.0.1"] : ["--unix_socket=\(socketPath)"]
        let server = try await ListeningProcess.start(try Self.product("pitlane-interop-server"), serverFlags)
        let peerFlags = endpoint == .tcp ? ["--port", String(server.port)] : ["--unix_socket", socketPath]
        let fromGrpcio = try await runProcess(Self.python, [Self.peer, "client", "--protos", Self.protos] + peerFlags)
        await server.stop()
        #expect(fromGrpcio.status == 0)
        #expect(fromGrpcio.output.contains(Self.allPassed), "\(fromGrpcio.output)")
        try? FileManager.default.removeItem(atPath: socketPath)

        let grpcioServer = try await ListeningProcess.start(
            Self.python, [Self.peer, "server", "--protos", Self.protos] + (endpoint == .tcp ? [] : ["--unix_socket", socketPath])
        )
        let clientFlags = endpoint == .tcp
            ? ["--server_host=127.0.0.1", "--server_port=\(grpcioServer.port)"] : ["--server_host=unix:\(socketPath)"]
        let toGrpcio = try await runProcess(try Self.product("pitlane-interop-client"), clientFlags + ["--test_case=all_cases"])
        await grpcioServer.stop()
        #expect(toGrpcio.status == 0)
        #expect(toGrpcio.output.contains(Self.allPassed), "\(toGrpcio.output)")
    }

    @Test("the executables refuse TLS until the transport has it, and bad flags, with exit status 2")
    func executablesRefuseTLS() async throws {
        let server = try await runProcess(try Self.product("pitlane-interop-server"), ["--port=0", "--use_tls=true"])
        #expect(server.status == 2)
        #expect(server.output.contains("--use_tls=true is not supported yet"), "\(server.output)")
        let client = try await runProcess(try Self.product("pitlane-interop-client"), [
            "--server_host=127.0.0.1", "--server_port=1", "--test_case=empty_unary", "--use_tls=true",
        ])
        #expect(client.status == 2)
        #expect(client.output.contains("--use_tls=true is not supported yet"), "\(client.output)")
        let unknown = try await runProcess(try Self.product("pitlane-interop-client"), ["--server_port=1", "--test_case=no_such_case"])
        #expect(unknown.status == 2)
        #expect(unknown.output.contains("no test case no_such_case"), "\(unknown.output)")
    }

    // MARK: Helpers

    /// Runs `body` while an in-process Pitlane interop server listens on the endpoint.
    func withPitlaneServer(_ endpoint: Endpoint, _ body: (HTTP2ServerTransport.Address) async throws -> Void) async throws {
        let socketPath = temporarySocketPath("pitlane-interop")
        defer { try? FileManager.default.removeItem(atPath: socketPath) }
        let address: HTTP2ServerTransport.Address = endpoint == .tcp
            ? .ipv4(host: "127.0.0.1", port: 0) : .unixDomainSocket(path: socketPath)
        let server = InteropServer.make(address: address)
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
            throw ListeningProcess.StartFailure(description: "\(name) is not built (looked at \(candidates)); run swift build")
        }
        return found
    }
}
