import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf
import TestSupport
import Testing

/// A message serialized once for many RPCs (`RPCWriter.write(serialized:)`):
/// `tryWrite(serialized:)` queues one without waiting while the stream keeps up. (Its bytes
/// against a Connect JSON client: PitlaneWebTests.)
@Suite("Messages serialized once, written to many RPCs", .timeLimit(.minutes(2)))
struct SerializedMessageTests {
    /// Expand answers with numbered 1 KiB messages queued by `tryWrite` until the stream's
    /// queue is over its watermark, then writes the refused one with `write`. The handler runs
    /// on the connection's loop, which sends nothing while it runs without waiting, so the
    /// queue fills after the watermark's worth of messages whatever the client does.
    struct Flooder: RegistrableRPCService {
        let accepted: Locked<Int>

        func registerMethods(with router: inout RPCRouter) {
            let accepted = self.accepted
            router.registerHandler(forMethod: Pitlane_Test_Echo_Echo.Method.Expand.descriptor) {
                (request: StreamingServerRequest<EchoRequest>, _) in
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
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: [Flooder(accepted: accepted)])
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
}
