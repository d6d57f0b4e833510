import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf
import PitlaneWeb
import TestSupport
import Testing

/// A message serialized once for many RPCs (`RPCWriter.write(serialized:)`) on a port that
/// also speaks Connect: an RPC with the binary codec sends the bytes as they are; one with
/// JSON serializes the message itself.
@Suite("Messages serialized once, to gRPC and Connect JSON clients", .timeLimit(.minutes(2)))
struct SerializedMessageWebTests {
    /// Echo's Get and Expand answering with one message serialized beforehand, whose bytes
    /// say something other than the message, so that a client shows which one it was sent.
    struct Broadcaster: RegistrableRPCService {
        static let broadcast = SerializedMessage(
            message: EchoResponse.with { $0.text = "serialized by each RPC" },
            binary: try! EchoResponse.with { $0.text = "serialized once" }.serializedBytes()
        )

        func registerMethods(with router: inout RPCRouter) {
            for (method, count) in [
                (Pitlane_Test_Echo_Echo.Method.Get.descriptor, 1), (Pitlane_Test_Echo_Echo.Method.Expand.descriptor, 3),
            ] {
                router.registerHandler(forMethod: method) { (request: StreamingServerRequest<EchoRequest>, _) in
                    StreamingServerResponse { (writer: RPCWriter<EchoResponse>) in
                        for _ in 0..<count { try await writer.write(serialized: Self.broadcast) }
                        return [:]
                    }
                }
            }
        }
    }

    @Test("gRPC clients get the bytes made once; Connect's JSON clients get the message")
    func bytesOrMessage() async throws {
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), config: .webDefaults), services: [Broadcaster()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                let texts = try await echo.expand(EchoRequest()) { response in
                    var texts: [String] = []
                    for try await message in response.messages { texts.append(message.text) }
                    return texts
                }
                #expect(texts == Array(repeating: "serialized once", count: 3))
            }
            let (status, output) = try await runProcess(
                "/usr/bin/curl",
                [
                    "-sS", "--http1.1", "-H", "content-type: application/json", "-d", "{}",
                    "http://127.0.0.1:\(port)/pitlane.test.echo.Echo/Get",
                ])
            #expect(status == 0 && output.contains(#""text":"serialized by each RPC""#), "\(output)")
        }
    }
}

extension HTTP2ServerTransport.Config {
    /// The defaults, with the web protocols on.
    static var webDefaults: Self {
        var config = Self.defaults
        config.web = WebConfig()
        return config
    }
}
