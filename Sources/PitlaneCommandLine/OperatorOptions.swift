import PitlaneObservability
import PitlaneCore

extension CommandLineOptions {
    /// The flags every server takes for operators: `--log-format json|logfmt` (one access-log
    /// line per RPC on standard error) and `--drain-delay SECONDS`.
    public static let operatorOptions: Set<String> = ["log-format", "drain-delay"]

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
