import PitlaneCore
import PitlaneProtobuf
import TestSupport
import Testing

@testable import PitlaneObservability

/// Per-message span events (OpenTelemetry's RPC conventions), off by default, bounded per span.
/// tracing_peer.py (check h) judges them through a real collector.
@Suite("Message events on spans", .timeLimit(.minutes(1)))
struct MessageEventsTests {
    static let method = MethodDescriptor(fullyQualifiedService: "pitlane.test.echo.Echo", method: "Update")

    /// (message.type, message.id, message.uncompressed_size) of each event named "message".
    static func events(_ span: OTLPSpan) -> [(String, Int, Int)] {
        span.events.filter { $0.name == "message" }.map { event in
            var type = ""
            var id = -1
            var size = -1
            for attribute in event.attributes {
                switch attribute.key {
                case "message.type": type = attribute.value.stringValue
                case "message.id": id = Int(attribute.value.intValue)
                case "message.uncompressed_size": size = Int(attribute.value.intValue)
                default: break
                }
            }
            return (type, id, size)
        }
    }

    /// A bidirectional call through the server interceptor: two requests read, three responses written.
    static func serverSpan(messageEvents: Bool) async throws -> OTLPSpan {
        let exporter = OTLPSpanExporter(serviceName: "test")
        let requests = [EchoRequest.with { $0.text = "a" }, EchoRequest.with { $0.text = "bcd" }]
        let request = StreamingServerRequest<EchoRequest>(metadata: [:], messages: .elements(requests))
        let interceptor = TracingServerInterceptor(exporter: exporter, messageEvents: messageEvents)
        let response: StreamingServerResponse<EchoResponse> = try await interceptor.intercept(
            request: request, context: ServerContext(descriptor: Self.method, peer: "in-process")
        ) { request, _ in
            var read = 0
            for try await _ in request.messages { read += 1 }
            let replies = read + 1
            return StreamingServerResponse { writer in
                for index in 0..<replies { try await writer.write(EchoResponse.with { $0.index = Int32(index + 1) }) }
                return [:]
            }
        }
        _ = try await response.accepted.get().producer(RPCWriter(wrapping: TraceStateTests.DiscardingWriter<EchoResponse>()))
        return try #require(exporter.take().first)
    }

    @Test("with messageEvents: RECEIVED 1, 2 and SENT 1, 2, 3 in order, each with its serialized size")
    func recorded() async throws {
        let span = try await Self.serverSpan(messageEvents: true)
        let events = Self.events(span)
        #expect(events.filter { $0.0 == "RECEIVED" }.map { $0.1 } == [1, 2])
        #expect(events.filter { $0.0 == "SENT" }.map { $0.1 } == [1, 2, 3])
        #expect(events.filter { $0.0 == "RECEIVED" }.map { $0.2 } == [3, 5])  // field 1, length, "a" / "bcd"
        #expect(events.filter { $0.0 == "SENT" }.map { $0.2 } == [2, 2, 2])  // field 2, varint 1, 2, 3
        #expect(span.droppedEventsCount == 0)
        #expect(span.events.allSatisfy { $0.timeUnixNano >= span.startTimeUnixNano && $0.timeUnixNano <= span.endTimeUnixNano })
    }

    @Test("off by default: no events")
    func offByDefault() async throws {
        let span = try await Self.serverSpan(messageEvents: false)
        #expect(span.events.isEmpty && span.droppedEventsCount == 0)
    }

    @Test("a span keeps the first events up to its limit and counts the rest as dropped; ids go on counting")
    func bounded() {
        let events = MessageEvents(limit: 4)
        for index in 0..<3 {
            events.received(EchoRequest.with { $0.text = String(repeating: "x", count: index) })
            events.sent(EchoResponse())
        }
        var span = OTLPSpan()
        events.write(into: &span)
        let kept = Self.events(span)
        #expect(kept.map { $0.0 } == ["RECEIVED", "SENT", "RECEIVED", "SENT"])
        #expect(kept.map { $0.1 } == [1, 1, 2, 2])
        #expect(kept.map { $0.2 } == [0, 0, 3, 0])
        #expect(span.droppedEventsCount == 2)
    }
}
