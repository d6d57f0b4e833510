import PitlaneHTTP2

/// What an HTTP/2 server transport's port serves beside gRPC: HTTP/1.1 connections,
/// gRPC-Web and Connect (over either HTTP version), CORS for browsers, WebSocket upgrades,
/// static files and plain HTTP endpoints. Set it as the transport's `config.web`.
///
/// ```swift
/// var config = HTTP2ServerTransport.Config.defaults
/// var web = WebConfig()
/// web.cors = .anyOrigin
/// web.staticFiles = StaticFiles(["index.html": Array(html.utf8)])
/// config.web = web
/// ```
public struct WebConfig: Sendable {
    /// The web protocols served, told apart by each request's content type. Default all
    /// (gRPC-Web and Connect).
    public var protocols = ServedProtocols.all
    /// Which web origins may call (gRPC-Web and Connect from browsers). Default
    /// `.sameOriginOnly`: no CORS headers, preflights refused.
    public var cors = CORSPolicy.sameOriginOnly
    /// Limits of HTTP/1.1 connections (gRPC-Web and Connect from browsers and `curl`).
    public var http1 = HTTP1Limits()
    /// WebSocket connections on the same port (an HTTP/1.1 upgrade). Default nil: upgrade
    /// requests get 404.
    public var webSocket: WebSocketEndpoint?
    /// Files served for `GET` requests that name them (a web app). Default nil.
    public var staticFiles: StaticFiles?
    /// Plain HTTP answers by path (`/metrics`, `/healthz`), computed per request. Default none.
    public var httpEndpoints: [String: HTTPEndpoint] = [:]

    /// Every protocol, no CORS, no WebSocket, files or endpoints.
    public init() {}

    /// The defaults, as ``init()`` gives them.
    public static var defaults: WebConfig { WebConfig() }
}

extension HTTP2ServerTransport.Config {
    /// HTTP/1.1, gRPC-Web, Connect, CORS, WebSocket, static files and HTTP endpoints on the
    /// transport's port, beside gRPC over HTTP/2. Default nil: gRPC over HTTP/2 alone, and an
    /// HTTP/1.1 client's connection is closed.
    public var web: WebConfig? {
        get { (protocolHandler as? WebProtocolHandler)?.web }
        set { protocolHandler = newValue.map(WebProtocolHandler.init) }
    }
}

/// PitlaneWeb's side of the transport's ``ServerProtocolHandler`` seam.
struct WebProtocolHandler: ServerProtocolHandler {
    let web: WebConfig

    var servesHTTP1: Bool { true }

    func start(_ head: HTTPRequestHead, limits: ServerCallLimits) -> ServerCall.Start {
        WebCalls.start(head, overHTTP2: true, web: web, limits: limits)
    }

    func http1Connection(_ accepted: AcceptedConnection) -> any ServingConnection {
        HTTP1ServerConnection(accepted, web: web)
    }
}
