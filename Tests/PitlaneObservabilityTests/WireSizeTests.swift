import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

@testable import PitlaneObservability

/// gRFC A66's `…compressed_message_size` histograms count bytes as they crossed the wire: over
/// HTTP/2 the transport's counts (each message's length prefix), compressed when the call is.
@Suite("Message sizes on the wire", .timeLimit(.minutes(1)))
struct WireSizeTests {
    static let serverLabels = #"grpc_method="pitlane.test.echo.Echo/Get",grpc_status="OK""#

    @Test("a 64 KiB request counts 65,540 bytes uncompressed and its compressed size gzip-compressed, the same on both sides")
    func compressedSizes() async throws {
        let services: [any RegistrableRPCService] = [EchoService()]
        let serverMetrics = ServerMetrics(services: services)
        let clientMetrics = ClientMetrics(target: "test", methods: Pitlane_Test_Echo_Echo.Method.descriptors)
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0)), services: services,
            observer: serverMetrics)
        func serverSum(_ name: String) -> Double? {
            let key = "grpc_server_call_\(name)_total_compressed_message_size_bytes_sum{\(Self.serverLabels)}"
            return ClientMetricsTests.parse(serverMetrics.render())[key]
        }
        func clientSum(_ name: String) -> Double? {
            let key = ClientMetricsTests.key(
                "grpc_client_attempt_\(name)_total_compressed_message_size_bytes_sum",
                status: "OK", target: "test")
            return ClientMetricsTests.parse(clientMetrics.render())[key]
        }
        // Field 1, a 3-byte length, 65,536 bytes of text.
        let request = EchoRequest.with { $0.text = String(repeating: "z", count: 65_536) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))
            try await withGRPCClient(transport: transport, observer: clientMetrics) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                _ = try await echo.get(request)
                #expect(serverSum("rcvd") == 65_540)
                #expect(clientSum("sent") == 65_540)
                _ = try await echo.get(request, options: .defaults.with { $0.compression = .gzip })
            }
        }
        let received = try #require(serverSum("rcvd"))
        #expect(received > 65_540 && received < 65_540 + 8_192, "the gzip-compressed request counted \(received - 65_540) bytes")
        #expect(clientSum("sent") == received)
        #expect(serverSum("sent") == clientSum("rcvd"))
        #expect(serverSum("sent") == Double(2 * 65_540))  // the answers go uncompressed: the server compresses none
    }
}
