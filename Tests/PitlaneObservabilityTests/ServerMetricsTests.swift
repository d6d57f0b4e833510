import PitlaneCore
import TestSupport
import Testing

@testable import PitlaneObservability

@Suite("Server metrics", .timeLimit(.minutes(1)))
struct ServerMetricsTests {
    static let method = MethodDescriptor(service: ServiceDescriptor(fullyQualifiedService: "pitlane.test.echo.Echo"), method: "Get")

    @Test("calls count per method and status; histogram buckets are cumulative and end at +Inf with the count")
    func counts() {
        let metrics = ServerMetrics(services: [EchoService()])
        for _ in 0..<3 {
            metrics.callStarted(metrics.observed(Self.method))
            metrics.callFinished(metrics.observed(Self.method), code: .ok, duration: .milliseconds(2), receivedBytes: 10, sentBytes: 2_000)
        }
        metrics.callStarted(metrics.observed(Self.method))
        metrics.callFinished(metrics.observed(Self.method), code: .notFound, duration: .seconds(3), receivedBytes: 0, sentBytes: 0)
        metrics.callStarted(metrics.observed(nil))
        metrics.callStarted(metrics.observed(Self.method))  // still running
        let text = metrics.render()
        let labels = #"grpc_method="pitlane.test.echo.Echo/Get""#
        #expect(text.contains("grpc_server_call_started_total{\(labels)} 5\n"))
        #expect(text.contains(#"grpc_server_call_started_total{grpc_method="other"} 1"#))
        #expect(text.contains("grpc_server_call_duration_seconds_count{\(labels),grpc_status=\"OK\"} 3\n"))
        #expect(text.contains("grpc_server_call_duration_seconds_count{\(labels),grpc_status=\"NOT_FOUND\"} 1\n"))
        #expect(text.contains("grpc_server_call_duration_seconds_bucket{\(labels),grpc_status=\"OK\",le=\"0.002\"} 3\n"))
        #expect(text.contains("grpc_server_call_duration_seconds_bucket{\(labels),grpc_status=\"OK\",le=\"0.001\"} 0\n"))
        #expect(text.contains("grpc_server_call_duration_seconds_bucket{\(labels),grpc_status=\"NOT_FOUND\",le=\"+Inf\"} 1\n"))
        #expect(text.contains("grpc_server_call_duration_seconds_sum{\(labels),grpc_status=\"OK\"} 0.006\n"))
        #expect(
            text.contains("grpc_server_call_sent_total_compressed_message_size_bytes_bucket{\(labels),grpc_status=\"OK\",le=\"2048\"} 3\n"))
        #expect(text.contains("grpc_server_call_rcvd_total_compressed_message_size_bytes_sum{\(labels),grpc_status=\"OK\"} 30\n"))
        #expect(!text.contains("grpc_status=\"INTERNAL\""))  // only what happened
        #expect(metrics.callsInProgress == 2)  // the running one, and "other" that never finished
    }

    @Test("a service's latency histogram is written after the gauges, in seconds, from its first scrape on")
    func serviceHistogram() {
        let metrics = ServerMetrics(services: [EchoService()])
        let latency = LatencyHistogram()
        metrics.addHistogram("orders_publish_latency_seconds", help: "Publish latency.", latency)
        #expect(metrics.render().contains("orders_publish_latency_seconds_count 0\n"))
        latency.record(.milliseconds(3))
        latency.record(.zero)
        let text = metrics.render()
        #expect(text.contains("# TYPE orders_publish_latency_seconds histogram\n"))
        #expect(text.contains("orders_publish_latency_seconds_bucket{le=\"0\"} 1\n"))
        #expect(text.contains("orders_publish_latency_seconds_bucket{le=\"0.002\"} 1\n"))
        #expect(text.contains("orders_publish_latency_seconds_bucket{le=\"0.003\"} 2\n"))
        #expect(text.contains("orders_publish_latency_seconds_bucket{le=\"+Inf\"} 2\n"))
        #expect(text.contains("orders_publish_latency_seconds_sum 0.003\n"))
        #expect(latency.count == 2)
    }

    @Test("label values are escaped")
    func escaping() {
        #expect(PrometheusText.escape("a\"b\\c\nd") == #"a\"b\\c\nd"#)
    }
}
