import PitlaneCore
import PitlaneProtobuf

/// What every protocol needs to know of the server: which protocols it speaks, its limits,
/// its compression and CORS policy. One per transport.
struct ServerProtocolSettings: Sendable {
    var served: ServedProtocols
    var cors: CORSPolicy
    var maxMessageBytes: Int
    var responseCompression: CompressionAlgorithm?
    var staticFiles: StaticFiles?
    var httpEndpoints: [String: HTTPEndpoint]
}

/// One RPC as the protocol that carries it sees it, the same over HTTP/1.1 and HTTP/2: what
/// the request head says (method, deadline, codec, compression, metadata), how its body
/// becomes messages, and how the handler's response parts become HTTP. Loop-confined.
struct ServerCall {
    /// What to do with a request head.
    enum Start {
        /// Serve it as an RPC.
        case serve(ServerCall)
        /// An RPC that fails before it starts: answer it with `status`, in its protocol's form.
        case reject(ServerCall, Status)
        /// Not an RPC (a CORS preflight, a wrong method or content type): answer in plain HTTP.
        case respond(HTTPResponseHead, body: [UInt8])
    }

    let wire: WireProtocol
    let codec: MessageCodec
    let descriptor: MethodDescriptor
    /// From `grpc-timeout` or `connect-timeout-ms`.
    private(set) var timeout: Duration?
    private(set) var metadata = Metadata()
    /// How the handler's messages are framed; handed to its writer.
    private(set) var encoder: ResponseMessageEncoder
    private(set) var requestCompression: CompressionAlgorithm?
    private(set) var body: MessageBodyDecoder
    /// Connect GET: the request message, from the query.
    private(set) var queryMessage: [UInt8]?
    private let requestContentType: String?
    private let corsHeaders: (policy: CORSPolicy, origin: String?)
    private var response = ResponseState.awaitingHead

    private enum ResponseState {
        case awaitingHead
        case headSent
        /// Connect unary: nothing is sent until the status, which sets the HTTP status.
        case unaryHeld(Metadata, message: BodyBytes?)
        case ended
    }

    /// Whether the request came as GET (Connect's cacheable unary calls).
    var isGet: Bool { wire == .connectUnary(get: true) }

    // MARK: Starting

    /// Reads a request head: which protocol, which method, and everything the call needs.
    static func start(_ head: HTTPRequestHead, overHTTP2: Bool, settings: ServerProtocolSettings) -> Start {
        if head.method == "OPTIONS", head.header("access-control-request-method") != nil {
            return .respond(settings.cors.preflightResponse(to: head), body: [])
        }
        let (path, query) = head.pathAndQuery
        if !settings.httpEndpoints.isEmpty, let endpoint = Self.endpoint(at: path, in: settings.httpEndpoints) {
            guard head.method == "GET" || head.method == "HEAD" else {
                return .respond(HTTPResponseHead(status: 405, headers: [("allow", "GET, HEAD")]), body: [])
            }
            let (response, body) = endpoint.response(to: head)
            return .respond(response, body: body)
        }
        if head.method == "GET" || head.method == "HEAD", let files = settings.staticFiles, let file = files.file(at: path) {
            let (response, body) = file.response(to: head)
            return .respond(response, body: body)
        }
        guard head.method == "POST" || head.method == "GET" else {
            return .respond(HTTPResponseHead(status: 405, headers: [("allow", "GET, POST")]), body: [])
        }
        guard let (wire, bodyCodec) = WireProtocol.identify(method: head.method, contentType: head.header("content-type")),
              settings.served.contains(wire.served) else {
            return .respond(HTTPResponseHead(status: 415, headers: [("accept-post", Self.acceptedContentTypes)]), body: [])
        }
        guard overHTTP2 || wire != .grpc else {
            let text = "gRPC needs HTTP/2; over HTTP/1.1 use gRPC-Web or Connect\n"
            return .respond(HTTPResponseHead(status: 505, headers: [("content-type", "text/plain")]), body: Array(text.utf8))
        }
        guard let descriptor = MethodDescriptor(path: query.isEmpty ? head.path : String(path)) else {
            return .respond(HTTPResponseHead(status: 404, headers: []), body: [])
        }
        var codec = bodyCodec
        if wire == .connectUnary(get: true) {
            guard let encoding = query.first(where: { $0.name == "encoding" }).map({ String(decoding: $0.value, as: UTF8.self) }),
                  let named = MessageCodec(rawValue: encoding) else {
                return .respond(HTTPResponseHead(status: 415, headers: []), body: Array("a GET needs encoding=proto or encoding=json\n".utf8))
            }
            codec = named
        }
        var call = ServerCall(wire: wire, codec: codec, descriptor: descriptor, head: head, settings: settings)
        if let failure = call.readHead(head, query: query, settings: settings) { return .reject(call, failure) }
        return .serve(call)
    }

    /// The endpoint at `path`, found without making a `String` of it: this runs for every
    /// request to a server with endpoints (`/metrics`, `/healthz`), RPCs included, and a path
    /// as long as most RPCs' would cost an allocation. Servers have a handful of endpoints.
    private static func endpoint(at path: Substring, in endpoints: [String: HTTPEndpoint]) -> HTTPEndpoint? {
        let length = path.utf8.count
        for (name, endpoint) in endpoints where name.utf8.count == length && name.utf8.elementsEqual(path.utf8) {
            return endpoint
        }
        return nil
    }

    static let acceptedContentTypes = "application/grpc, application/grpc-web, application/grpc-web-text, application/proto, application/json, application/connect+proto, application/connect+json"

    private init(wire: WireProtocol, codec: MessageCodec, descriptor: MethodDescriptor, head: HTTPRequestHead, settings: ServerProtocolSettings) {
        self.wire = wire
        self.codec = codec
        self.descriptor = descriptor
        requestContentType = head.header("content-type")
        corsHeaders = (settings.cors, head.header("origin"))
        let layout: MessageBodyDecoder.Layout = switch wire {
        case .grpcWeb(text: true): .base64Envelopes
        case .connectUnary: .wholeBody
        case .grpc, .grpcWeb, .connectStreaming: .envelopes(acceptedFlags: 0x01)
        }
        body = MessageBodyDecoder(layout, maxMessageBytes: settings.maxMessageBytes)
        encoder = ResponseMessageEncoder(wire: wire, compression: nil)
    }

    /// Deadline, compression and metadata from the head; a status when the head is unusable.
    private mutating func readHead(_ head: HTTPRequestHead, query: [(name: String, value: [UInt8])], settings: ServerProtocolSettings) -> Status? {
        switch wire {
        case .grpc, .grpcWeb:
            if let text = head.header("grpc-timeout") {
                guard let duration = GRPCTimeout.parse(text) else {
                    return Status(code: .internal, message: "malformed grpc-timeout \(text)")
                }
                timeout = duration
            }
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
        let headers = wire.compressionHeaders
        // A GET has no body to label: its compression is a query parameter.
        let encoding = isGet
            ? query.first { $0.name == "compression" }.map { String(decoding: $0.value, as: UTF8.self) }
            : head.header(headers.encoding)
        if let encoding, encoding != "identity" {
            guard let algorithm = CompressionAlgorithm(name: encoding) else {
                return Status(code: .unimplemented, message: "\(headers.encoding) \(encoding) is not supported; use gzip, deflate or identity")
            }
            requestCompression = algorithm
        }
        let responseCompression = settings.responseCompression.flatMap { algorithm in
            let accepted = (head.header(headers.accept) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: " ") }
            return accepted.contains(algorithm.name) ? algorithm : nil
        }
        encoder = ResponseMessageEncoder(wire: wire, compression: responseCompression)
        for header in head.headers where !Self.isProtocolHeader(header.name) {
            metadata.addHeaderField(name: header.name, value: header.value)
        }
        if isGet {
            guard let message = query.first(where: { $0.name == "message" })?.value else {
                return Status(code: .invalidArgument, message: "a GET needs its request in the message query parameter")
            }
            if query.contains(where: { $0.name == "base64" && $0.value == Array("1".utf8) }) {
                do {
                    queryMessage = try Base64Quanta.decodeAll(message)
                } catch {
                    return Status(code: .invalidArgument, message: "the message query parameter is not valid base64")
                }
            } else {
                queryMessage = message
            }
        }
        return nil
    }

    /// Headers that belong to HTTP or to a protocol rather than to the application. Told
    /// apart by first letter, so a usual request's headers cost a comparison or two each.
    private static func isProtocolHeader(_ name: String) -> Bool {
        switch name.utf8.first {
        case UInt8(ascii: "a"): name.hasPrefix("access-control-") || name == "accept" || name == "accept-encoding"
        case UInt8(ascii: "c"): name.hasPrefix("connect-") || name == "content-encoding"
        case UInt8(ascii: "e"): name == "expect"
        case UInt8(ascii: "k"): name == "keep-alive"
        case UInt8(ascii: "o"): name == "origin"
        case UInt8(ascii: "p"): name == "proxy-connection"
        case UInt8(ascii: "r"): name == "referer"
        case UInt8(ascii: "s"): name == "sec-fetch-mode" || name == "sec-fetch-site" || name == "sec-fetch-dest"
        case UInt8(ascii: "t"): name == "transfer-encoding"
        case UInt8(ascii: "u"): name == "upgrade"
        case UInt8(ascii: "x"): name == "x-grpc-web" || name == "x-user-agent"
        default: false
        }
    }

    // MARK: Request

    /// Turns a received message (as the decoder framed it) into a request part: decompressed
    /// when it says it is compressed, or, for Connect unary calls, when the body is. Its size
    /// as it arrived goes to the stream's wire counts (`counts`).
    func requestPart(_ message: (compressed: Bool, bytes: [UInt8]), limit: Int,
                     counting counts: StreamOutbound) throws -> RPCRequestPart {
        counts.receivedMessage(wireBytes: message.bytes.count)
        let compressed = message.compressed || (!wire.isEnveloped && requestCompression != nil)
        guard compressed else { return .message(message.bytes, []) }
        guard let algorithm = requestCompression else {
            throw RPCError(code: .internal, message: "a compressed message arrived without \(wire.compressionHeaders.encoding)")
        }
        return .message(try MessageCompression.decompress(message.bytes, with: algorithm, limit: limit), .compressed)
    }

    mutating func appendBody(_ bytes: UnsafeRawBufferPointer) throws { try body.append(bytes) }
    mutating func nextMessage() throws -> (compressed: Bool, bytes: [UInt8])? {
        try body.next().map { ($0.flags & 0x01 != 0, $0.bytes) }
    }
    /// The request's end: a unary body's message (a GET's came from its query).
    mutating func finishBody() throws -> [UInt8]? {
        let message = try body.finish()
        return isGet ? nil : message
    }

    // MARK: Response

    /// The handler's response metadata.
    mutating func responseHead(_ metadata: Metadata, _ perform: (ResponseAction) -> Void) {
        guard case .awaitingHead = response else { return }
        if case .connectUnary = wire {
            response = .unaryHeld(metadata, message: nil)
            return
        }
        response = .headSent
        perform(.head(head(status: 200, metadata: metadata, extra: []), endsStream: false))
    }

    /// One response message, as ``ResponseMessageEncoder`` framed it.
    mutating func responseMessage(_ encoded: BodyBytes, _ perform: (ResponseAction) -> Void) {
        switch response {
        case .awaitingHead:
            responseHead([:], perform)
            responseMessage(encoded, perform)
        case .headSent:
            perform(.body(encoded))
        case .unaryHeld(let metadata, nil):
            response = .unaryHeld(metadata, message: encoded)
        case .unaryHeld, .ended:
            return  // a unary call has one response message; the executor sends no second
        }
    }

    /// The handler's status and trailers: the end of the response.
    mutating func responseEnd(_ status: Status, trailers: Metadata, _ perform: (ResponseAction) -> Void) {
        let previous = response
        guard !isEnded else { return }
        response = .ended
        switch wire {
        case .grpc:
            let fields = Self.statusFields(status) + trailers.headerFields
            if case .headSent = previous {
                perform(.end(trailers: fields))
            } else {
                // Trailers-only: the status travels in the only HEADERS frame.
                perform(.head(head(status: 200, metadata: [:], extra: fields), endsStream: true))
            }
        case .grpcWeb(let text):
            if case .awaitingHead = previous { perform(.head(head(status: 200, metadata: [:], extra: []), endsStream: false)) }
            let frame = GRPCWebWire.trailersFrame(Self.statusFields(status) + trailers.headerFields)
            perform(.body(BodyBytes(text ? Array(Base64.encode(frame).utf8) : frame)))
            perform(.end(trailers: []))
        case .connectStreaming:
            if case .awaitingHead = previous { perform(.head(head(status: 200, metadata: [:], extra: []), endsStream: false)) }
            let json = ConnectWire.endOfStream(status, trailers: trailers)
            perform(.body(BodyBytes(enveloping: json, flags: 0x02)))
            perform(.end(trailers: []))
        case .connectUnary:
            var metadata = Metadata()
            var message: BodyBytes?
            if case .unaryHeld(let held, let heldMessage) = previous { (metadata, message) = (held, heldMessage) }
            let trailerFields = trailers.headerFields.map { (name: "trailer-" + $0.name, value: $0.value) }
            if status.code == .ok, let message {
                var extra = trailerFields
                if let compression = encoder.compression { extra.append(("content-encoding", compression.name)) }
                perform(.head(head(status: 200, metadata: metadata, extra: extra), endsStream: message.isEmpty))
                if !message.isEmpty {
                    perform(.body(message))
                    perform(.end(trailers: []))
                }
            } else {
                let failure = status.code == .ok ? Status(code: .internal, message: "the handler sent no response message") : status
                let errorBody = ConnectWire.errorBody(failure, trailers: trailers)
                var errorHead = head(status: ConnectWire.httpStatus(for: failure.code), metadata: metadata, extra: trailerFields)
                errorHead.headers[0].value = "application/json"  // the content type comes first
                perform(.head(errorHead, endsStream: false))
                perform(.body(BodyBytes(errorBody)))
                perform(.end(trailers: []))
            }
        }
    }

    var isEnded: Bool {
        if case .ended = response { return true }
        return false
    }

    /// A response head: content type first, then compression, metadata, `extra`, and CORS.
    private func head(status: Int, metadata: Metadata, extra: [(name: String, value: String)]) -> HTTPResponseHead {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(3 + metadata.count + extra.count)
        headers.append(("content-type", wire.responseContentType(codec: codec, requested: requestContentType)))
        switch wire {
        case .grpc, .grpcWeb:
            headers.append(("grpc-accept-encoding", MessageCompression.acceptEncoding))
            if let compression = encoder.compression { headers.append(("grpc-encoding", compression.name)) }
        case .connectStreaming:
            headers.append(("connect-accept-encoding", Self.connectAcceptEncoding))
            if let compression = encoder.compression { headers.append(("connect-content-encoding", compression.name)) }
        case .connectUnary:
            headers.append(("accept-encoding", Self.connectAcceptEncoding))
        }
        headers += metadata.headerFields
        headers += extra
        if corsHeaders.origin != nil {
            headers += corsHeaders.policy.responseHeaders(origin: corsHeaders.origin, exposing: headers.map(\.0))
        }
        return HTTPResponseHead(status: status, headers: headers)
    }

    private static let connectAcceptEncoding = "gzip, deflate"

    /// `grpc-status` and, unless empty, `grpc-message`.
    static func statusFields(_ status: Status) -> [(name: String, value: String)] {
        var fields = [(name: "grpc-status", value: String(status.code.rawValue))]
        if !status.message.isEmpty { fields.append(("grpc-message", PercentEncoding.encode(status.message))) }
        return fields
    }
}

/// How a handler's messages are framed for its protocol, on the handler's task (so
/// compression and base64 run off the event loop).
struct ResponseMessageEncoder: Sendable {
    let wire: WireProtocol
    /// Messages are compressed with this, when set.
    let compression: CompressionAlgorithm?

    /// The message as the body carries it, and its size on the wire: what its length prefix
    /// says (after compression; without the prefix, before base64), or the whole body's.
    func encode(_ message: [UInt8], flags: MessageFlags) throws -> (body: BodyBytes, wireBytes: Int) {
        switch wire {
        case .connectUnary:
            // The whole body is compressed or not, as its head says: no per-message choice.
            let body = try compression.map { try MessageCompression.compress(message, with: $0) } ?? message
            return (BodyBytes(body), body.count)
        case .grpcWeb(text: true):
            let framed = try BodyBytes.enveloping(message, compression: flags.contains(.noCompression) ? nil : compression)
            return (BodyBytes(Array(Base64.encode(framed.joined).utf8)), framed.payload.count)
        case .grpc, .grpcWeb(text: false), .connectStreaming:
            // The message's own array: serialized once, it may be on many streams' queues.
            let framed = try BodyBytes.enveloping(message, compression: flags.contains(.noCompression) ? nil : compression)
            return (framed, framed.payload.count)
        }
    }
}
