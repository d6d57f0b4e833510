import Foundation
import PitlaneCore
import PitlaneHTTP2
import PitlaneObservability

extension CommandLineOptions {
    /// The option a command-line client takes for its own RPC metrics: `--client-metrics PATH`.
    public static let clientMetricsOptions: Set<String> = ["client-metrics"]

    /// `--client-metrics PATH`: the metrics of the calls this program makes to `target`
    /// (gRPC's client instruments, gRFC A66; `methods` are the services' `Method.descriptors`),
    /// or nil without the option. Pass it as the client's `observer`, and hand it to
    /// ``writeClientMetrics(_:)`` when the calls are done.
    public func clientMetrics(target: HTTP2ClientTransport.Target, methods: [MethodDescriptor]) -> ClientMetrics? {
        self["client-metrics"] == nil ? nil : ClientMetrics(target: target, methods: methods)
    }

    /// Writes `metrics` in the Prometheus text format to the `--client-metrics` file,
    /// replacing it. A failure to write is reported on standard error, not thrown: the
    /// program's own outcome stands.
    public func writeClientMetrics(_ metrics: ClientMetrics?) {
        guard let metrics, let path = self["client-metrics"] else { return }
        do {
            try metrics.render().write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            FileHandle.standardError.write(Data("cannot write --client-metrics \(path): \(error)\n".utf8))
        }
    }
}
