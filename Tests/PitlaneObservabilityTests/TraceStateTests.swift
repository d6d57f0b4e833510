import PitlaneCore
import TestSupport
import Testing

@testable import PitlaneObservability

@Suite("W3C tracestate", .timeLimit(.minutes(1)))
struct TraceStateTests {
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    static let method = MethodDescriptor(service: ServiceDescriptor(fullyQualifiedService: "pitlane.test.echo.Echo"), method: "Get")

    @Test("well-formed lists come back compact: whitespace and empty members go, repeated headers join")
    func wellFormed() {
        #expect(TraceState.validated(["pitlane=peer"]) == "pitlane=peer")
        #expect(TraceState.validated([" a=1 ,, \tb@c=2\t", "rojo=00f067aa0ba902b7"]) == "a=1,b@c=2,rojo=00f067aa0ba902b7")
        #expect(TraceState.validated(["congo=t61rcWkgMzE,k= v!~"]) == "congo=t61rcWkgMzE,k= v!~")
        let thirtyTwo = (0..<32).map { "k\($0)=v" }.joined(separator: ",")
        #expect(TraceState.validated([thirtyTwo]) == thirtyTwo)
        let full = "a=" + String(repeating: "x", count: 254) + ",b=" + String(repeating: "y", count: 253)  // 512 characters
        #expect(full.utf8.count == 512 && TraceState.validated([full]) == full)
        #expect(TraceState.validated([]) == nil && TraceState.validated([" , "]) == nil)
    }

    @Test("malformed lists are dropped whole: 33 members, over 512 characters, bad keys or values, a key twice")
    func malformed() {
        let thirtyThree = (0..<33).map { "k\($0)=v" }.joined(separator: ",")
        let long = "a=" + String(repeating: "x", count: 254) + ",b=" + String(repeating: "y", count: 254)  // 513 characters
        for header in [
            thirtyThree, long, "Pitlane=peer", "1abc=x", "a=1,a=2", "a=b=c", "a=", "=v", "a b=1", "a@=1",
            "@b=1", "a@B=1", "a@b123456789012345=1", "a=\u{7F}", "a=é", "novalue", "a=" + String(repeating: "x", count: 257),
        ] {
            #expect(TraceState.validated([header]) == nil, "\(header)")
        }
        #expect(TraceState.validated(["a=1", "a=2"]) == nil)  // a key twice across two headers
    }

    @Test("a tracestate is read only beside a valid traceparent; a bad one leaves the context without one")
    func withTraceparent() throws {
        let context = try #require(TraceContext(traceparent: Self.traceparent, tracestate: ["pitlane=peer"]))
        #expect(context.traceState == "pitlane=peer" && context.child().traceState == "pitlane=peer")
        let dropped = try #require(TraceContext(traceparent: Self.traceparent, tracestate: ["Bad=1"]))
        #expect(dropped.traceState == "")
        #expect(TraceContext(traceparent: "00-xyz", tracestate: ["pitlane=peer"]) == nil)
    }

    /// Writes nowhere: a handler's messages in these tests go unread.
    struct DiscardingWriter<Element: Sendable>: RPCWriterProtocol {
        func write(_ element: Element) async throws {}
    }

    @Test("the server span carries the caller's tracestate; a call the handler makes continues the trace and forwards it")
    func forwarded() async throws {
        let exporter = OTLPSpanExporter(serviceName: "test")
        let sent = Locked<Metadata>([:])
        let request = StreamingServerRequest<EchoRequest>(
            metadata: ["traceparent": .string(Self.traceparent), "tracestate": "pitlane=peer, congo=t61rcWkgMzE"],
            messages: .elements([EchoRequest()]))
        let response: StreamingServerResponse<EchoResponse> = try await TracingServerInterceptor(exporter: exporter).intercept(
            request: request, context: ServerContext(descriptor: Self.method, peer: "in-process")
        ) { _, _ in
            // The handler calls another service through a traced client.
            let call: StreamingClientResponse<EchoResponse> = try await TracingClientInterceptor(exporter: exporter).intercept(
                request: StreamingClientRequest<EchoRequest>(metadata: [:]) { _ in },
                context: ClientContext(descriptor: Self.method, options: .defaults)
            ) { request, _ in
                sent.value = request.metadata
                return StreamingClientResponse(accepted: .success(.init(metadata: [:], bodyParts: .elements([.trailingMetadata([:])]))))
            }
            for try await _ in try call.accepted.get().bodyParts {}
            return StreamingServerResponse(single: ServerResponse(message: EchoResponse()))
        }
        _ = try await response.accepted.get().producer(RPCWriter(wrapping: DiscardingWriter<EchoResponse>()))

        let spans = exporter.take()
        let server = try #require(spans.first { $0.kind == .server })
        let client = try #require(spans.first { $0.kind == .client })
        #expect(server.traceState == "pitlane=peer,congo=t61rcWkgMzE")
        #expect(server.parentSpanID == [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7])
        #expect(server.flags & 0x300 == 0x300)  // the parent is known to be remote
        #expect(client.traceID == server.traceID && client.parentSpanID == server.spanID)
        #expect(client.traceState == server.traceState && client.flags & 0x300 == 0x100)
        let forwarded = TraceContext(traceparent: try #require(sent.value[stringValues: "traceparent"].first))
        #expect(forwarded?.traceID == server.traceID && forwarded?.spanID == client.spanID)
        #expect(sent.value[stringValues: "tracestate"] == ["pitlane=peer,congo=t61rcWkgMzE"])
    }

    @Test("a malformed tracestate beside a valid traceparent: the trace continues, without a trace_state")
    func malformedOnTheServer() async throws {
        let exporter = OTLPSpanExporter(serviceName: "test")
        let request = StreamingServerRequest<EchoRequest>(
            metadata: ["traceparent": .string(Self.traceparent), "tracestate": "a=1,a=2"], messages: .elements([EchoRequest()]))
        let response: StreamingServerResponse<EchoResponse> = try await TracingServerInterceptor(exporter: exporter).intercept(
            request: request, context: ServerContext(descriptor: Self.method, peer: "in-process")
        ) { _, _ in
            #expect(TraceContext.current?.traceState == "")
            return StreamingServerResponse(error: RPCError(code: .notFound, message: "no such thing"))
        }
        #expect(throws: RPCError.self) { try response.accepted.get() }
        let span = try #require(exporter.take().first)
        #expect(span.traceState == "" && span.traceID == TraceContext(traceparent: Self.traceparent)?.traceID)
        #expect(TraceContext.current == nil)  // only while the handler runs
    }
}
