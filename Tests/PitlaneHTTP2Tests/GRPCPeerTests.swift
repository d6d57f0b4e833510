import Foundation
import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// Python grpcio (gRPC C-core) judges the HTTP/2 transport over real sockets on 127.0.0.1.
@Suite("HTTP/2 transport against grpcio")
struct GRPCPeerTests {
    static let repositoryRoot = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = repositoryRoot.appending(path: ".venv/bin/python").path
    static let peer = repositoryRoot.appending(path: "Tests/Peers/grpc_echo_peer.py").path
    static let protos = repositoryRoot.appending(path: "Tests/TestSupport").path

    @Test("a grpcio client calls a Pitlane server: every RPC kind, errors, metadata, deadlines, cancellation")
    func grpcioClientToPitlaneServer() async throws {
        let transport = HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), config: .defaults.with { $0.eventLoopThreads = 2 })
        let server = GRPCServer(transport: transport, services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let address = try await server.listeningAddress
            let port = try #require(address.port)
            let output = try await Self.run([Self.peer, "client", "--port", String(port), "--protos", Self.protos])
            #expect(output.contains("checks: 12 ok, 0 failed"), "\(output)")
        }
    }

    /// Runs the Python peer to its end; returns everything it printed.
    static func run(_ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(filePath: python)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = await Task.detached { pipe.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

extension HTTP2ServerTransport.Config {
    func with(_ update: (inout Self) -> Void) -> Self {
        var copy = self
        update(&copy)
        return copy
    }
}
