import Testing

@testable import PitlaneObservability

@Suite("W3C Trace Context", .timeLimit(.minutes(1)))
struct TraceContextTests {
    @Test("traceparent parses and prints back; a child keeps the trace and gets its own span id")
    func roundTrip() throws {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let context = try #require(TraceContext(traceparent: header))
        #expect(context.traceparent == header)
        let child = context.child()
        #expect(child.traceID == context.traceID && child.spanID != context.spanID && child.flags == 1)
    }

    @Test("ids are held as integers and given back as the bytes the header and OTLP carry")
    func idBytes() throws {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let context = try #require(TraceContext(traceparent: header))
        #expect(context.traceID == [0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36])
        #expect(context.spanID == [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7])
        #expect(context.traceIDHex == "4bf92f3577b34da6a3ce929d0e0e4736")
        let rebuilt = TraceContext(traceID: context.traceID, spanID: context.spanID, flags: context.flags)
        #expect(rebuilt == context && rebuilt.traceparent == header)
    }

    @Test("new traces and children get fresh, non-zero ids: 10,000 draws, no repeats")
    func freshIDs() {
        var traces = Set<[UInt8]>()
        var spans = Set<[UInt8]>()
        for _ in 0..<5_000 {
            let trace = TraceContext.newTrace()
            let child = trace.child()
            #expect(trace.traceID.contains { $0 != 0 } && trace.spanID.contains { $0 != 0 } && child.spanID.contains { $0 != 0 })
            #expect(child.traceID == trace.traceID && trace.flags == 1)
            traces.insert(trace.traceID)
            spans.insert(trace.spanID)
            spans.insert(child.spanID)
        }
        #expect(traces.count == 5_000 && spans.count == 10_000)
    }

    @Test("malformed values start a new trace instead: zero ids, uppercase, wrong lengths, version ff")
    func malformed() {
        for header in [
            "", "00-xyz", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01extra", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        ] {
            #expect(TraceContext(traceparent: header) == nil, "\(header)")
        }
        // A later version may add fields.
        #expect(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future") != nil)
    }

    @Test("server spans fail only on the server's own errors; client spans on any")
    func errorStatus() {
        #expect(!SpanInProgress.isError(.notFound, kind: .server))
        #expect(SpanInProgress.isError(.internal, kind: .server))
        #expect(SpanInProgress.isError(.notFound, kind: .client))
        #expect(!SpanInProgress.isError(.ok, kind: .client))
    }
}
