import PitlaneCore
import PitlaneHTTP2

extension ClientMetrics {
    /// Counters for calls to `target`, whose URI is the `grpc_target` label: `dns:///host:port`
    /// for a name (gRPC's canonical form), else as the target describes itself
    /// (`ipv4:127.0.0.1:8080`, `ipv6:[::1]:8080`, `unix:/tmp/kart.sock`).
    public convenience init(target: HTTP2ClientTransport.Target, methods: [MethodDescriptor]) {
        self.init(target: ClientMetrics.uri(of: target), methods: methods)
    }

    static func uri(of target: HTTP2ClientTransport.Target) -> String {
        switch target {
        case .dns(let host, let port): "dns:///\(host):\(port)"
        default: target.description
        }
    }
}
