import Foundation
import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// Clients that break the rules, made with Python's h2 library: the server answers each as
/// gRPC's PROTOCOL-HTTP2.md says, and keeps serving well-behaved clients.
@Suite("HTTP/2 server against hostile peers")
struct HostilePeerTests {
    static let hostilePeer = GRPCPeerTests.repositoryRoot.appending(path: "Tests/Peers/hostile_peer.py").path

    @Test("garbage preface, no content-type, bad grpc-timeout, 1 GiB prefix, unknown encoding, rapid reset")
    func hostilePeers() async throws {
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: [EchoService()]
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            let attacks = try await GRPCPeerTests.run([Self.hostilePeer, "--port", String(port)])
            #expect(attacks.contains("checks: 7 ok, 0 failed"), "\(attacks)")
            // grpcio, after all that, on the same server.
            let afterwards = try await GRPCPeerTests.run([GRPCPeerTests.peer, "client", "--port", String(port), "--protos", GRPCPeerTests.protos])
            #expect(afterwards.contains("checks: 13 ok, 0 failed"), "\(afterwards)")
        }
    }
}
