import PitlaneCore

/// The web protocols a server speaks beside gRPC, which its HTTP/2 transport always serves;
/// one port serves them all.
public struct ServedProtocols: OptionSet, Sendable, Hashable {
    /// The option bits: 2 for gRPC-Web, 4 for Connect.
    public let rawValue: UInt8

    /// The set whose bits are `rawValue`.
    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// gRPC-Web (`application/grpc-web`, `application/grpc-web-text`), over HTTP/1.1 or HTTP/2.
    public static let grpcWeb = ServedProtocols(rawValue: 1 << 1)
    /// The Connect protocol (`application/proto`, `application/json`, `application/connect+…`,
    /// and GET for side-effect-free methods), over HTTP/1.1 or HTTP/2.
    public static let connect = ServedProtocols(rawValue: 1 << 2)

    /// gRPC-Web and Connect.
    public static let all: ServedProtocols = [.grpcWeb, .connect]
}

/// The protocol one request speaks, from its method and `content-type`: gRPC (served by the
/// HTTP/2 transport itself; over HTTP/1.1 it is refused) or a web protocol.
enum WireProtocol: Equatable, Sendable {
    case grpc
    /// `text`: the body is base64 (`application/grpc-web-text`) both ways.
    case grpcWeb(text: Bool)
    /// A unary call: the body is the message itself; for GET, the message is in the query.
    case connectUnary(get: Bool)
    /// A streaming call: enveloped messages and an end-of-stream message.
    case connectStreaming

    /// Which option serves it; gRPC is always served over HTTP/2.
    var served: ServedProtocols {
        switch self {
        case .grpc: []
        case .grpcWeb: .grpcWeb
        case .connectUnary, .connectStreaming: .connect
        }
    }

    /// Identifies a request's protocol and codec; nil when the content type names none of
    /// them (the answer is 415).
    static func identify(method: String, contentType: String?) -> (WireProtocol, MessageCodec)? {
        if method == "GET" { return (.connectUnary(get: true), .protobuf) }  // the codec is in the query
        guard let contentType else { return nil }
        if let known = contentTypes[contentType] { return known }
        // Parameters (`; charset=utf-8`) and case do not change the protocol.
        return contentTypes[HTTPRequestHead.mediaType(contentType)]
    }

    private static let contentTypes: [String: (WireProtocol, MessageCodec)] = [
        "application/grpc": (.grpc, .protobuf),
        "application/grpc+proto": (.grpc, .protobuf),
        "application/grpc-web": (.grpcWeb(text: false), .protobuf),
        "application/grpc-web+proto": (.grpcWeb(text: false), .protobuf),
        "application/grpc-web-text": (.grpcWeb(text: true), .protobuf),
        "application/grpc-web-text+proto": (.grpcWeb(text: true), .protobuf),
        "application/proto": (.connectUnary(get: false), .protobuf),
        "application/json": (.connectUnary(get: false), .json),
        "application/connect+proto": (.connectStreaming, .protobuf),
        "application/connect+json": (.connectStreaming, .json),
    ]

    /// The response's `content-type`.
    func responseContentType(codec: MessageCodec, requested: String?) -> String {
        switch self {
        case .grpc: "application/grpc"
        case .grpcWeb(let text): text ? "application/grpc-web-text+proto" : "application/grpc-web+proto"
        case .connectUnary: codec == .json ? "application/json" : "application/proto"
        case .connectStreaming: codec == .json ? "application/connect+json" : "application/connect+proto"
        }
    }

    /// The request header naming the request's compression, and the one listing what the
    /// client accepts for the response.
    var compressionHeaders: (encoding: String, accept: String) {
        switch self {
        case .grpc, .grpcWeb: ("grpc-encoding", "grpc-accept-encoding")
        case .connectUnary: ("content-encoding", "accept-encoding")
        case .connectStreaming: ("connect-content-encoding", "connect-accept-encoding")
        }
    }
}

/// Which browser origins may call the server (CORS, for gRPC-Web and Connect from web
/// pages), and what their scripts may read of responses.
public struct CORSPolicy: Sendable {
    /// Origins allowed, such as `https://app.example.com`; `["*"]` allows every origin.
    public var allowedOrigins: Set<String>
    /// How long a browser may cache a preflight's answer. Default 2 h.
    public var maxAge: Duration

    /// A policy allowing `allowedOrigins`, whose preflight answers browsers may cache for `maxAge` (default 7,200 s, 2 h).
    public init(allowedOrigins: Set<String>, maxAge: Duration = .seconds(7200)) {
        self.allowedOrigins = allowedOrigins
        self.maxAge = maxAge
    }

    /// No cross-origin calls: responses carry no CORS headers, preflights are refused.
    public static let sameOriginOnly = CORSPolicy(allowedOrigins: [])
    /// Every origin may call.
    public static let anyOrigin = CORSPolicy(allowedOrigins: ["*"])

    func allows(_ origin: String) -> Bool {
        allowedOrigins.contains("*") || allowedOrigins.contains(origin)
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`).
    func preflightResponse(to head: HTTPRequestHead) -> HTTPResponseHead {
        guard let origin = head.header("origin"), allows(origin) else {
            return HTTPResponseHead(status: 403, headers: [("vary", "origin")])
        }
        var headers = [
            ("access-control-allow-origin", origin),
            ("access-control-allow-methods", "GET, POST"),
            ("access-control-max-age", String(maxAge.components.seconds)),
            ("vary", "origin"),
        ]
        // Any request header may be sent: metadata is the application's to choose.
        if let requested = head.header("access-control-request-headers") {
            headers.append(("access-control-allow-headers", requested))
        }
        return HTTPResponseHead(status: 204, headers: headers)
    }

    /// Headers for an actual response to `origin`: allowed, and every response header
    /// readable by the page (status, message, metadata).
    func responseHeaders(origin: String?, exposing names: [String]) -> [(name: String, value: String)] {
        guard let origin, allows(origin) else { return [] }
        var exposed = ["grpc-status", "grpc-message", "grpc-status-details-bin"]
        for name in names where !exposed.contains(name) && !Self.alwaysReadable.contains(name) { exposed.append(name) }
        return [
            ("access-control-allow-origin", origin),
            ("access-control-expose-headers", exposed.joined(separator: ", ")),
            ("vary", "origin"),
        ]
    }

    /// Response headers scripts read without being told (the CORS safelist), and ours that
    /// need no exposing.
    private static let alwaysReadable: Set<String> = [
        "content-type", "content-length", "content-encoding", "cache-control", "expires", "last-modified", "pragma",
        "access-control-allow-origin", "access-control-expose-headers", "vary",
    ]
}
