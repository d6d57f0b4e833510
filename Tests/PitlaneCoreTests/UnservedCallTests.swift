import PitlaneCore
import PitlaneProtobuf
import Synchronization
import TestSupport
import Testing

/// Calls no handler serves (a method the server does not know) still reach the interceptors
/// that ask for them (`seesUnservedCalls`: logging, access logs, tracing), and only those.
@Suite("Calls no handler serves", .timeLimit(.minutes(1)))
struct UnservedCallTests {
    static let missing = MethodDescriptor(fullyQualifiedService: "pitlane.test.echo.Echo", method: "Missing")

    @Test("an unknown method is logged UNIMPLEMENTED; an interceptor that does not ask for such calls never sees it")
    func unknownMethodIsLogged() async throws {
        let lines = Mutex<[String]>([])
        let logger = LoggingServerInterceptor { line in lines.withLock { $0.append(line) } }
        // Were it run, this one would turn the call into PERMISSION_DENIED.
        let trail = Trail()
        let gate = RecordingServerInterceptor(name: "gate", trail: trail, reject: true)
        #expect(logger.seesUnservedCalls && !gate.seesUnservedCalls)
        try await withEchoServer(serverInterceptors: [logger, gate]) { echo, _ in
            let error = await #expect(throws: RPCError.self) {
                try await echo.client.unary(
                    request: ClientRequest(message: EchoRequest()), descriptor: Self.missing,
                    serializer: ProtobufSerializer<EchoRequest>(), deserializer: ProtobufDeserializer<EchoResponse>()
                ) { try $0.message }
            }
            #expect(error?.code == .unimplemented)
        }
        let logged = lines.withLock { $0 }
        #expect(logged.count == 1)
        #expect(logged.first?.hasPrefix("rpc /pitlane.test.echo.Echo/Missing from in-process: UNIMPLEMENTED in ") == true)
        #expect(trail.all.isEmpty)
    }
}
