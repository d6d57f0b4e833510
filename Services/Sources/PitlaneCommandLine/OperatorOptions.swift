import PitlaneCore
import PitlaneObservability

extension CommandLineOptions {
    /// The flags every server takes for operators: `--log-format json|logfmt` (one access-log
    /// line per RPC on standard error), `--drain-delay SECONDS` and `--otlp-endpoint HOST:PORT`
    /// (spans to an OpenTelemetry collector over OTLP/gRPC; off without it).
    public static let operatorOptions: Set<String> = ["log-format", "drain-delay", "otlp-endpoint"]

    /// The bare flag beside `--otlp-endpoint`, for servers and clients that trace:
    /// `--otlp-message-events` gives each span a "message" event per message sent and received
    /// (off by default).
    public static let tracingFlags: Set<String> = ["otlp-message-events"]

    /// `--otlp-endpoint HOST:PORT`: an exporter of spans for `serviceName`, or nil (tracing off).
    public func spanExporter(serviceName: String) -> OTLPSpanExporter? {
        self["otlp-endpoint"] == nil ? nil : OTLPSpanExporter(serviceName: serviceName)
    }

    /// A server's tracing interceptor recording on `exporter` (none when tracing is off), with
    /// message events under `--otlp-message-events`.
    public func tracingServerInterceptors(_ exporter: OTLPSpanExporter?) -> [any ServerInterceptor] {
        guard let exporter else { return [] }
        return [TracingServerInterceptor(exporter: exporter, messageEvents: has("otlp-message-events"))]
    }

    /// A client's tracing interceptor recording on `exporter` (none when tracing is off), with
    /// message events under `--otlp-message-events`.
    public func tracingClientInterceptors(_ exporter: OTLPSpanExporter?) -> [any ClientInterceptor] {
        guard let exporter else { return [] }
        return [TracingClientInterceptor(exporter: exporter, messageEvents: has("otlp-message-events"))]
    }

    /// Runs `body`, exporting `exporter`'s spans to `--otlp-endpoint` meanwhile (when tracing is on).
    public func exportingSpans<T: Sendable>(_ exporter: OTLPSpanExporter?, body: () async throws -> T) async throws -> T {
        guard let exporter, let endpoint = self["otlp-endpoint"] else { return try await body() }
        return try await exporter.exporting(to: endpoint, body: body)
    }

    /// `--log-format json|logfmt`: the access log's interceptor, or none without the flag.
    public func accessLog() throws -> [any ServerInterceptor] {
        guard let name = self["log-format"] else { return [] }
        guard let format = AccessLogInterceptor.Format(rawValue: name) else {
            throw UsageError(description: "--log-format is json or logfmt, not \(name)")
        }
        return [AccessLogInterceptor(format: format)]
    }

    /// `--drain-delay SECONDS` (default 0): how long a server that was told to stop keeps
    /// serving while reporting NOT_SERVING, so that load balancers and `/readyz` probes see it
    /// leave before its connections get GOAWAY (Kubernetes: set it above the probe period).
    public func drainDelay() throws -> Duration {
        let seconds = try integer("drain-delay", default: 0)
        guard seconds >= 0 else { throw UsageError(description: "--drain-delay must not be negative") }
        return .seconds(seconds)
    }
}
