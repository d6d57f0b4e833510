// The code of the article "Transports" (Pitlane.docc/Transports.md).
import Pitlane

func tcpAndUnixSockets() async throws {
    let tcp = GRPCServer(transport: .http2(address: .ipv6(host: "::", port: 8080)), services: [GreeterService()])
    let unix = GRPCServer(transport: .http2(address: .unixDomainSocket(path: "/run/greeter.sock")), services: [GreeterService()])
    try await withGRPCClient(transport: try .http2(target: .unixDomainSocket(path: "/run/greeter.sock"))) { client in
        _ = try await Hello_Greeter.Client(wrapping: client).sayHello(.with { $0.name = "Ada" })
    }
    _ = (tcp, unix)
}

func tlsServer() -> GRPCServer<HTTP2ServerTransport> {
    let tls = TLSServerConfig(certificateChainPath: "server.pem", privateKeyPath: "server.key")
    return GRPCServer(transport: .http2(address: .ipv4(host: "0.0.0.0", port: 8443), security: .tls(tls)), services: [GreeterService()])
}

func tlsClient() throws -> HTTP2ClientTransport {
    try .http2(target: .dns(host: "greeter.example", port: 8443), security: .tls(TLSClientConfig(trustRootsPath: "ca.pem")))
}

func mutualTLS() throws -> (GRPCServer<HTTP2ServerTransport>, HTTP2ClientTransport) {
    let serverTLS = TLSServerConfig(
        certificateChainPath: "server.pem", privateKeyPath: "server.key",
        clientCertificateVerification: .required, trustRootsPath: "clients-ca.pem"
    )
    let server = GRPCServer(
        transport: .http2(address: .ipv4(host: "0.0.0.0", port: 8443), security: .tls(serverTLS)), services: [GreeterService()]
    )
    let clientTLS = TLSClientConfig(trustRootsPath: "ca.pem", certificateChainPath: "client.pem", privateKeyPath: "client.key")
    let transport = try HTTP2ClientTransport(target: .dns(host: "greeter.example", port: 8443), security: .tls(clientTLS))
    return (server, transport)
}

func serverConfiguration() -> HTTP2ServerTransport {
    var config = HTTP2ServerTransport.Config.defaults
    config.eventLoops.threads = 2  // one epoll loop per thread; connections spread over them
    config.connection.maxIdle = .seconds(300)  // close connections with no stream for this long
    config.http2.maxConcurrentStreams = 1_000
    config.rpc.maxMessageBytes = 4 << 20
    return .http2(address: .ipv4(host: "0.0.0.0", port: 8080), config: config)
}

func clientConfiguration() throws -> HTTP2ClientTransport {
    var config = HTTP2ClientTransport.Config.defaults
    config.loadBalancing = .roundRobin  // every address the name resolves to, in turn
    config.keepalive = .init(time: .seconds(30), timeout: .seconds(10))  // ping after 30 s of silence
    return try .http2(target: .dns(host: "greeter.internal", port: 8080), config: config)
}

func inProcess() async throws {
    let transport = InProcessTransport()
    let server = GRPCServer(transport: transport.server, services: [GreeterService()])
    try await withThrowingDiscardingTaskGroup { group in
        group.addTask { try await server.serve() }
        try await withGRPCClient(transport: transport.client) { client in
            let reply = try await Hello_Greeter.Client(wrapping: client).sayHello(.with { $0.name = "Ada" })
            print(reply.message)
        }
        server.beginGracefulShutdown()
    }
}
