@testable import PitlaneObservability
import Testing

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

    @Test("malformed values start a new trace instead: zero ids, uppercase, wrong lengths, version ff")
    func malformed() {
        for header in ["", "00-xyz", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                       "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                       "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
                       "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"] {
            #expect(TraceContext(traceparent: header) == nil, "\(header)")
        }
        #expect(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future") != nil)  // a later version may add fields
    }

    @Test("server spans fail only on the server's own errors; client spans on any")
    func errorStatus() {
        #expect(!SpanInProgress.isError(.notFound, kind: .server))
        #expect(SpanInProgress.isError(.internal, kind: .server))
        #expect(SpanInProgress.isError(.notFound, kind: .client))
        #expect(!SpanInProgress.isError(.ok, kind: .client))
    }
}
