import PitlaneHTTP2
import PitlaneWeb

/// The transport flags every Pitlane server and command-line client shares:
/// `--host`, `--port`, `--unix PATH`; TLS with `--tls-cert`/`--tls-key` on servers and
/// `--tls`, `--ca`, `--server-name` on clients.
extension CommandLineOptions {
    /// The value options `serverAddress`, `serverSecurity`, `clientTarget` and `clientSecurity` read.
    public static let transportOptions: Set<String> = [
        "host", "port", "unix", "tls-cert", "tls-key", "ca", "server-name", "cors-origins",
        "keepalive", "min-ping-interval",
    ]
    /// The flag `clientSecurity` reads.
    public static let transportFlags: Set<String> = ["tls"]

    /// Where a server listens: `--unix PATH`, or `--host` (127.0.0.1) and `--port`.
    public func serverAddress(defaultPort: Int) throws -> HTTP2ServerTransport.Address {
        if let path = self["unix"] { return .unixDomainSocket(path: path) }
        return .ipv4(host: self["host"] ?? "127.0.0.1", port: try port(default: defaultPort))
    }

    /// The web origins that may call from browsers: `--cors-origins https://a.example,https://b.example`
    /// (or `*`); none when absent.
    public func corsPolicy() -> CORSPolicy {
        guard let origins = self["cors-origins"] else { return .sameOriginOnly }
        return CORSPolicy(allowedOrigins: Set(origins.split(separator: ",").map { String($0) }))
    }

    /// A server's ping policy: `--min-ping-interval SECONDS`, the shortest interval between
    /// client pings it tolerates (gRPC's default is 300).
    public func minimumPingInterval(default defaultSeconds: Int) throws -> Duration {
        let seconds = try integer("min-ping-interval", default: defaultSeconds)
        guard seconds >= 0 else { throw UsageError(description: "--min-ping-interval must not be negative") }
        return .seconds(seconds)
    }

    /// A client's keepalive: `--keepalive SECONDS` between pings (0: none), each answered
    /// within half that, at most 20 s, or the connection is taken for dead.
    public func clientKeepalive(defaultSeconds: Int) throws -> HTTP2ClientTransport.Config.Keepalive? {
        let seconds = try integer("keepalive", default: defaultSeconds)
        guard seconds > 0 else { return nil }
        return .init(time: .seconds(seconds), timeout: .seconds(min(20, max(1, seconds / 2))))
    }

    /// TLS when `--tls-cert` and `--tls-key` are given, plaintext when neither is.
    public func serverSecurity() throws -> HTTP2ServerTransport.Security {
        switch (self["tls-cert"], self["tls-key"]) {
        case (nil, nil): return .plaintext
        case (let certificate?, let key?): return .tls(.init(certificateChainPath: certificate, privateKeyPath: key))
        default: throw UsageError(description: "--tls-cert and --tls-key go together")
        }
    }

    /// Where a client connects: `--unix PATH`, or `--host` (an IPv4 address or a name) and `--port`.
    public func clientTarget(defaultPort: Int) throws -> HTTP2ClientTransport.Target {
        if let path = self["unix"] { return .unixDomainSocket(path: path) }
        let host = self["host"] ?? "127.0.0.1"
        let port = try port(default: defaultPort)
        let isIPv4 = host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
        return isIPv4 ? .ipv4(host: host, port: port) : .dns(host: host, port: port)
    }

    /// TLS when `--tls` or `--ca` is given (verifying against `--ca`, or the system roots).
    public func clientSecurity() -> HTTP2ClientTransport.Security {
        guard has("tls") || self["ca"] != nil else { return .plaintext }
        return .tls(.init(trustRootsPath: self["ca"], serverHostnameOverride: self["server-name"]))
    }

    private func port(default defaultPort: Int) throws -> Int {
        let port = try integer("port", default: defaultPort)
        guard (0...65_535).contains(port) else { throw UsageError(description: "--port must be 0...65535") }
        return port
    }
}
