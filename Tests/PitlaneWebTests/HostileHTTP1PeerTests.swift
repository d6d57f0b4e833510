import PitlaneCore
import PitlaneHTTP2
import PitlaneWeb
import TestSupport
import Testing

/// The HTTP/1.1 side of a server's port against a peer that breaks every rule it can, and
/// grpcio on the same port afterwards.
@Suite("HTTP/1.1 server against hostile peers", .timeLimit(.minutes(3)))
struct HostileHTTP1PeerTests {
    @Test(
        "HTTP/1.1: headers, request line and body over the limits, broken chunks, smuggling, no host, a slow head, pipelining, HTTP/1.0, h2c upgrade, 100-continue"
    )
    func hostileHTTP1Peers() async throws {
        var web = WebConfig()
        web.http1.headTimeout = .seconds(1)
        web.http1.maxBodyBytes = 1_000_000
        var config = HTTP2ServerTransport.Config.defaults
        config.web = web
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), config: config), services: [EchoService()]
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            let attacks = try await Peers.run([Self.hostileHTTP1Peer, "--port", String(port)])
            #expect(attacks.contains("checks: 15 ok, 0 failed"), "\(attacks)")
            // grpcio on the same port afterwards.
            let afterwards = try await Peers.run([
                Peers.script("grpc_echo_peer.py"), "client", "--port", String(port), "--protos", Peers.protos,
            ])
            #expect(afterwards.contains("checks: 13 ok, 0 failed"), "\(afterwards)")
        }
    }

    static let hostileHTTP1Peer = Peers.script("hostile_http1.py")
}
