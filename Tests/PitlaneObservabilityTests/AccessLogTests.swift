import PitlaneCore
import Testing

@testable import PitlaneObservability

@Suite("Access log lines", .timeLimit(.minutes(1)))
struct AccessLogTests {
    @Test("JSON and logfmt lines carry method, status, level, duration, peer and the W3C trace id")
    func lines() {
        let json = AccessLogInterceptor(format: .json) { _ in }
            .line(
                method: "SwiftKartService/ListRaces", code: .notFound, duration: .microseconds(1500), peer: "ipv4:127.0.0.1:5",
                traceID: "ab")
        #expect(json.hasPrefix(#"{"ts":""#))
        #expect(
            json.hasSuffix(
                #""level":"warn","event":"rpc","method":"SwiftKartService/ListRaces","status":"NOT_FOUND","duration_ms":1.5,"peer":"ipv4:127.0.0.1:5","trace_id":"ab"}"#
            ))
        let logfmt = AccessLogInterceptor(format: .logfmt) { _ in }
            .line(method: "a/b", code: .internal, duration: .zero, peer: "unix:/tmp/x y", traceID: nil)
        #expect(logfmt.contains(#" level=error event=rpc method=a/b status=INTERNAL duration_ms=0.0 peer="unix:/tmp/x y""#))
    }

    @Test("trace ids come from well-formed traceparent values only")
    func traceparent() {
        #expect(
            AccessLogInterceptor.traceID(of: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
                == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(AccessLogInterceptor.traceID(of: "00-00000000000000000000000000000000-00f067aa0ba902b7-01") == nil)
        #expect(AccessLogInterceptor.traceID(of: "garbage") == nil)
    }
}
