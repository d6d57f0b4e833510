// PitlaneWeb: the web beside gRPC on a Pitlane server's port — HTTP/1.1 (http-parser),
// gRPC-Web, Connect, CORS, static files, HTTP endpoints and WebSocket (RFC 6455) — plugged into
// PitlaneHTTP2's server transport through `HTTP2ServerTransport.Config.web`.
@_exported import PitlaneHTTP2
