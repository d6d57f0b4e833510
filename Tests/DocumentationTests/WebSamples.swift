// The code of the article "One port" (Pitlane.docc/OnePort.md).
import Pitlane

func onePortServer() -> GRPCServer<HTTP2ServerTransport> {
    var config = HTTP2ServerTransport.Config.defaults
    var web = WebConfig()  // gRPC-Web and Connect, over HTTP/1.1 and HTTP/2; same-origin pages only
    web.cors = CORSPolicy(allowedOrigins: ["https://app.example"])
    web.staticFiles = StaticFiles(["/index.html": Array("<h1>Greeter</h1>".utf8)])
    web.httpEndpoints["/version"] = HTTPEndpoint { .text(200, "1.0\n") }
    config.web = web
    return GRPCServer(transport: .http2(address: .ipv4(host: "0.0.0.0", port: 8080), config: config), services: [GreeterService()])
}

func webSocketEcho(config: inout HTTP2ServerTransport.Config) {
    var web = config.web ?? WebConfig()
    web.webSocket = WebSocketEndpoint { path in
        guard path == "/echo" else { return nil }  // 404 for any other path
        return { socket in
            for try await message in socket.messages { try await socket.send(message) }
        }
    }
    config.web = web
}

func connectClient() throws -> HTTP2ClientTransport {
    var config = HTTP2ClientTransport.Config.defaults
    config.wireProtocol = .connect  // or .grpcWeb; .grpc is the default
    config.codec = .json  // or .protobuf, the default
    return try HTTP2ClientTransport(target: .dns(host: "api.example", port: 8080), config: config)
}
