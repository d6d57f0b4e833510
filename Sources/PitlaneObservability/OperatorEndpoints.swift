import PitlaneCore
import PitlaneHTTP2
import PitlaneHealth
import PitlaneWeb

extension HTTP2ServerTransport.Config {
    /// What operators scrape and probe on the server's own port:
    /// - `/metrics`: `metrics` in the Prometheus text format;
    /// - `/healthz` and `/readyz`: 200 while `health` says the server ("") is SERVING, else
    ///   503 (a draining server turns NOT_SERVING first, so a balancer stops sending to it).
    /// They are served over HTTP/1.1 and HTTP/2 by ``web`` (PitlaneWeb), which this turns on
    /// if it is not yet.
    public mutating func addOperatorEndpoints(metrics: ServerMetrics, health: HealthService) {
        var web = self.web ?? WebConfig()
        web.httpEndpoints["/metrics"] = HTTPEndpoint {
            .text(200, metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
        let probe = HTTPEndpoint {
            health.status() == .serving ? .text(200, "ok\n") : .text(503, "not serving\n")
        }
        web.httpEndpoints["/healthz"] = probe
        web.httpEndpoints["/readyz"] = probe
        self.web = web
    }
}

extension ServerMetrics {
    /// Adds the transport's gauges: connections open.
    public func observe(_ transport: HTTP2ServerTransport) {
        addGauge("pitlane_server_connections_open", help: "Connections open (HTTP/2, HTTP/1.1, WebSocket).") {
            transport.openConnections
        }
    }
}
