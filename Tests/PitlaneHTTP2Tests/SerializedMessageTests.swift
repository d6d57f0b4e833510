import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf
import TestSupport
import Testing

/// A message serialized once for many RPCs (`RPCWriter.write(serialized:)`): an RPC with the
/// binary codec sends the bytes as they are; one with JSON serializes the message itself.
/// `tryWrite(serialized:)` queues one without waiting while the stream keeps up.
@Suite("Messages serialized once, written to many RPCs", .timeLimit(.minutes(2)))
struct SerializedMessageTests {
    /// Echo's Get and Expand answering with one message serialized beforehand, whose bytes
    /// say something other than the message, so that a client shows which one it was sent.
    struct Broadcaster: RegistrableRPCService {
        static let broadcast = SerializedMessage(
            message: EchoResponse.with { $0.text = "serialized by each RPC" },
            binary: try! EchoResponse.with { $0.text = "serialized once" }.serializedBytes()
        )

        func registerMethods(with router: inout RPCRouter) {
            for (method, count) in [(Pitlane_Test_Echo_Echo.Method.Get.descriptor, 1), (Pitlane_Test_Echo_Echo.Method.Expand.descriptor, 3)] {
                router.registerHandler(forMethod: method) { (request: StreamingServerRequest<EchoRequest>, _) in
                    StreamingServerResponse { (writer: RPCWriter<EchoResponse>) in
                        for _ in 0..<count { try await writer.write(serialized: Self.broadcast) }
                        return [:]
                    }
                }
            }
        }
    }

    /// Expand answers with numbered 1 KiB messages queued by `tryWrite` until the stream's
    /// queue is over its watermark, then writes the refused one with `write`. The handler runs
    /// on the connection's loop, which sends nothing while it runs without waiting, so the
    /// queue fills after the watermark's worth of messages whatever the client does.
    struct Flooder: RegistrableRPCService {
        let accepted: Locked<Int>

        func registerMethods(with router: inout RPCRouter) {
            let accepted = self.accepted
            router.registerHandler(forMethod: Pitlane_Test_Echo_Echo.Method.Expand.descriptor) { (request: StreamingServerRequest<EchoRequest>, _) in
                StreamingServerResponse { (writer: RPCWriter<EchoResponse>) in
                    let padding = String(repeating: "x", count: 1_024)
                    for number in 0..<100_000 {
                        let message = SerializedMessage(EchoResponse.with { $0.text = "\(number) \(padding)" })
                        if writer.tryWrite(serialized: message) { continue }
                        accepted.value = number
                        try await writer.write(serialized: message)
                        return [:]
                    }
                    return [:]
                }
            }
        }
    }

    @Test("tryWrite queues while the stream keeps up and refuses past its watermark; every message arrives once, in order")
    func tryWriteUntilBehind() async throws {
        let accepted = Locked(0)
        let server = GRPCServer(transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: [Flooder(accepted: accepted)])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let numbers = try await Pitlane_Test_Echo_Echo.Client(wrapping: client).expand(EchoRequest()) { response in
                    var numbers: [Int] = []
                    for try await message in response.messages {
                        numbers.append(Int(message.text.prefix { $0 != " " }) ?? -1)
                    }
                    return numbers
                }
                let queued = accepted.value
                // Refused well before the bound, once the window and the queue were full.
                #expect(queued > 0 && queued < 1_000, "tryWrite took \(queued) messages")
                #expect(numbers == Array(0...queued))
            }
        }
    }

    @Test("gRPC clients get the bytes made once; Connect's JSON clients get the message")
    func bytesOrMessage() async throws {
        let server = GRPCServer(transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: [Broadcaster()])
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
            let (status, output) = try await runProcess("/usr/bin/curl", [
                "-sS", "--http1.1", "-H", "content-type: application/json", "-d", "{}",
                "http://127.0.0.1:\(port)/pitlane.test.echo.Echo/Get",
            ])
            #expect(status == 0 && output.contains(#""text":"serialized by each RPC""#), "\(output)")
        }
    }
}
