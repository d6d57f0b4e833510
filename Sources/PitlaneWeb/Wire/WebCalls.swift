import PitlaneCore
import PitlaneHTTP2

/// Requests for the web protocols, over HTTP/1.1 or HTTP/2: a CORS preflight, an HTTP
/// endpoint, a static file, or a gRPC-Web or Connect call.
enum WebCalls {
    /// Reads a request head: which protocol, which method, and everything the call needs.
    static func start(_ head: HTTPRequestHead, overHTTP2: Bool, web: WebConfig, limits: ServerCallLimits) -> ServerCall.Start {
        if head.method == "OPTIONS", head.header("access-control-request-method") != nil {
            return .respond(web.cors.preflightResponse(to: head), body: [])
        }
        let (path, query) = head.pathAndQuery
        if !web.httpEndpoints.isEmpty, let endpoint = Self.endpoint(at: path, in: web.httpEndpoints) {
            guard head.method == "GET" || head.method == "HEAD" else {
                return .respond(HTTPResponseHead(status: 405, headers: [("allow", "GET, HEAD")]), body: [])
            }
            let (response, body) = endpoint.response(to: head)
            return .respond(response, body: body)
        }
        if head.method == "GET" || head.method == "HEAD", let files = web.staticFiles, let file = files.file(at: path) {
            let (response, body) = file.response(to: head)
            return .respond(response, body: body)
        }
        guard head.method == "POST" || head.method == "GET" else {
            return .respond(HTTPResponseHead(status: 405, headers: [("allow", "GET, POST")]), body: [])
        }
        guard let (wire, bodyCodec) = WireProtocol.identify(method: head.method, contentType: head.header("content-type")),
            web.protocols.contains(wire.served)
        else {
            return .respond(HTTPResponseHead(status: 415, headers: [("accept-post", Self.acceptedContentTypes)]), body: [])
        }
        if wire == .grpc {
            guard overHTTP2 else {
                let text = "gRPC needs HTTP/2; over HTTP/1.1 use gRPC-Web or Connect\n"
                return .respond(HTTPResponseHead(status: 505, headers: [("content-type", "text/plain")]), body: Array(text.utf8))
            }
            return GRPCServerWire.start(head, limits: limits)
        }
        guard let descriptor = MethodDescriptor(path: query.isEmpty ? head.path : String(path)) else {
            return .respond(HTTPResponseHead(status: 404, headers: []), body: [])
        }
        var codec = bodyCodec
        let isGet = wire == .connectUnary(get: true)
        if isGet {
            guard let encoding = query.first(where: { $0.name == "encoding" }).map({ String(decoding: $0.value, as: UTF8.self) }),
                let named = MessageCodec(rawValue: encoding)
            else {
                return .respond(
                    HTTPResponseHead(status: 415, headers: []), body: Array("a GET needs encoding=proto or encoding=json\n".utf8))
            }
            codec = named
        }
        let layout: MessageBodyDecoder.Layout
        let framing: ResponseMessageEncoder.Framing
        switch wire {
        case .grpcWeb(text: true): (layout, framing) = (.base64Envelopes, .base64Envelopes)
        case .connectUnary: (layout, framing) = (.wholeBody, .wholeBody)
        case .grpc, .grpcWeb, .connectStreaming: (layout, framing) = (.envelopes(acceptedFlags: 0x01), .envelopes)
        }
        let served = WebServerWire(
            wire: wire, codec: codec, requestContentType: head.header("content-type"), cors: web.cors,
            origin: head.header("origin"))
        var call = ServerCall(
            wire: served, codec: codec, descriptor: descriptor, layout: layout, framing: framing,
            encodingHeader: wire.compressionHeaders.encoding, maxMessageBytes: limits.maxMessageBytes,
            requiresNoSideEffects: isGet)
        if let failure = call.readWebHead(head, wire: wire, query: query, limits: limits) { return .reject(call, failure) }
        return .serve(call)
    }

    /// The endpoint at `path`, found without making a `String` of it: this runs for every
    /// web request to a server with endpoints (`/metrics`, `/healthz`), and a path as long as
    /// most RPCs' would cost an allocation. Servers have a handful of endpoints.
    private static func endpoint(at path: Substring, in endpoints: [String: HTTPEndpoint]) -> HTTPEndpoint? {
        let length = path.utf8.count
        for (name, endpoint) in endpoints where name.utf8.count == length && name.utf8.elementsEqual(path.utf8) {
            return endpoint
        }
        return nil
    }

    static let acceptedContentTypes =
        "application/grpc, application/grpc-web, application/grpc-web-text, application/proto, application/json, application/connect+proto, application/connect+json"
}

extension ServerCall {
    /// Deadline, compression and metadata from a web call's head; a status when the head is
    /// unusable.
    fileprivate mutating func readWebHead(
        _ head: HTTPRequestHead, wire: WireProtocol, query: [(name: String, value: [UInt8])],
        limits: ServerCallLimits
    ) -> Status? {
        switch wire {
        case .grpc, .grpcWeb:
            return readGRPCHead(head, responseCompression: limits.responseCompression)
        case .connectUnary, .connectStreaming:
            if let version = head.header("connect-protocol-version"), version != "1" {
                return Status(code: .invalidArgument, message: "connect-protocol-version \(version) is not 1")
            }
            if let text = head.header("connect-timeout-ms") {
                guard text.count <= 10, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let milliseconds = Int64(text) else {
                    return Status(code: .invalidArgument, message: "malformed connect-timeout-ms \(text)")
                }
                timeout = .milliseconds(milliseconds)
            }
        }
        let isGet = requiresNoSideEffects
        let headers = wire.compressionHeaders
        // A GET has no body to label: its compression is a query parameter.
        let encoding =
            isGet
            ? query.first { $0.name == "compression" }.map { String(decoding: $0.value, as: UTF8.self) }
            : head.header(headers.encoding)
        if let failure = negotiateCompression(
            request: encoding, encodingHeader: headers.encoding, accepted: head.header(headers.accept),
            offering: limits.responseCompression)
        {
            return failure
        }
        takeMetadata(from: head)
        if isGet {
            guard let message = query.first(where: { $0.name == "message" })?.value else {
                return Status(code: .invalidArgument, message: "a GET needs its request in the message query parameter")
            }
            if query.contains(where: { $0.name == "base64" && $0.value == Array("1".utf8) }) {
                do {
                    headMessage = try Base64Quanta.decodeAll(message)
                } catch {
                    return Status(code: .invalidArgument, message: "the message query parameter is not valid base64")
                }
            } else {
                headMessage = message
            }
        }
        return nil
    }
}
