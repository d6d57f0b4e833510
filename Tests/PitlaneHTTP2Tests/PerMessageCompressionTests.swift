import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// Per-message compression over HTTP/2: each side learns which messages arrived compressed
/// and can send single messages uncompressed on a compressed RPC (`MessageCompressionControl`).
@Suite("Per-message compression over HTTP/2", .timeLimit(.minutes(5)))
struct PerMessageCompressionTests {
    /// Echo's Update, answering each request with whether it arrived compressed, and sending
    /// the answer compressed only when the request's `repeat` is 1.
    struct CompressionReporter: RegistrableRPCService {
        func registerMethods(with router: inout RPCRouter) {
            router.registerHandler(
                forMethod: Pitlane_Test_Echo_Echo.Method.Update.descriptor,
                deserializer: ProtobufDeserializer<EchoRequest>(), serializer: ProtobufSerializer<EchoResponse>()
            ) { request, context in
                StreamingServerResponse { writer in
                    for try await message in request.messages {
                        let arrived = context.messageCompression.lastReadWasCompressed ? "compressed" : "plain"
                        context.messageCompression.compressesWrites = message.repeat == 1
                        try await writer.write(.with { $0.text = arrived })
                    }
                    return [:]
                }
            }
        }
    }

    @Test("a compressed RPC's messages each go compressed or not, and each side sees which did")
    func flagsBothWays() async throws {
        var config = HTTP2ServerTransport.Config.defaults
        config.rpc.responseCompression = .gzip
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), config: config),
            services: [CompressionReporter()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                let control = MessageCompressionControl()
                let options = CallOptions.defaults.with {
                    $0.compression = .gzip
                    $0.messageCompression = control
                }
                // Requests: compressed, plain, compressed. Responses: compressed, plain, plain.
                let received = try await echo.update(options: options) { writer in
                    let text = String(repeating: "lap ", count: 1000)
                    try await writer.write(
                        .with {
                            $0.text = text
                            $0.repeat = 1
                        })
                    control.compressesWrites = false
                    try await writer.write(.with { $0.text = text })
                    control.compressesWrites = true
                    try await writer.write(.with { $0.text = text })
                } onResponse: { response in
                    var received: [(text: String, compressed: Bool)] = []
                    for try await message in response.messages {
                        received.append((message.text, control.lastReadWasCompressed))
                    }
                    return received
                }
                #expect(received.map(\.text) == ["compressed", "plain", "compressed"])
                #expect(received.map(\.compressed) == [true, false, false])
            }
        }
    }
}
