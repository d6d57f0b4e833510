import PitlaneCore
import PitlaneProtobuf

/// One RPC as the connection that carries it sees it, over HTTP/2 or HTTP/1.1 and whatever
/// its wire protocol: what the request head said (method, deadline, codec, compression,
/// metadata), how its body becomes messages, and how the handler's response parts become
/// HTTP. What differs between protocols is its ``ServerWire``; a wire's `start` makes the
/// call from a request head. Loop-confined.
package struct ServerCall {
    /// What to do with a request head.
    package enum Start {
        /// Serve it as an RPC.
        case serve(ServerCall)
        /// An RPC that fails before it starts: answer it with `status`, in its protocol's form.
        case reject(ServerCall, Status)
        /// Not an RPC (a CORS preflight, a wrong method or content type): answer in plain HTTP.
        case respond(HTTPResponseHead, body: [UInt8])
    }

    package let wire: any ServerWire
    package let codec: MessageCodec
    package let descriptor: MethodDescriptor
    /// The deadline's distance, from the head.
    package var timeout: Duration?
    package private(set) var metadata = Metadata()
    /// How the handler's messages are framed; handed to its writer.
    package private(set) var encoder: ResponseMessageEncoder
    package private(set) var requestCompression: CompressionAlgorithm?
    package private(set) var body: MessageBodyDecoder
    /// A request message that came with the head rather than in the body (Connect's GET
    /// carries it in the query).
    package var headMessage: [UInt8]?
    /// Whether the method must be free of side effects to be served (a GET may be cached
    /// and repeated).
    package let requiresNoSideEffects: Bool
    /// The request header that names the request's compression.
    private let encodingHeader: String
    private var response = ResponseState.awaitingHead

    private enum ResponseState {
        case awaitingHead
        case headSent
        case held(Metadata, message: BodyBytes?)
        case ended
    }

    /// A call on `wire` before its head is read: bodies laid out as `layout`, responses framed
    /// as `framing`, uncompressed until ``negotiateCompression(request:encodingHeader:accepted:offering:)``.
    package init(
        wire: any ServerWire, codec: MessageCodec, descriptor: MethodDescriptor, layout: MessageBodyDecoder.Layout,
        framing: ResponseMessageEncoder.Framing, encodingHeader: String, maxMessageBytes: Int, requiresNoSideEffects: Bool = false
    ) {
        self.wire = wire
        self.codec = codec
        self.descriptor = descriptor
        body = MessageBodyDecoder(layout, maxMessageBytes: maxMessageBytes)
        encoder = ResponseMessageEncoder(framing: framing, compression: nil)
        self.encodingHeader = encodingHeader
        self.requiresNoSideEffects = requiresNoSideEffects
    }

    // MARK: Reading the head

    /// The request's compression (`request`, from the header `encodingHeader`), and the
    /// response's: `offering`, when `accepted` (the client's accept header) lists it. A
    /// status when the request's compression is not one this server decompresses.
    package mutating func negotiateCompression(
        request: String?, encodingHeader: String, accepted: String?, offering: CompressionAlgorithm?
    ) -> Status? {
        if let request, request != "identity" {
            guard let algorithm = CompressionAlgorithm(name: request) else {
                return Status(code: .unimplemented, message: "\(encodingHeader) \(request) is not supported; use gzip, deflate or identity")
            }
            requestCompression = algorithm
        }
        let responseCompression = offering.flatMap { algorithm in
            let names = (accepted ?? "").split(separator: ",").map { $0.trimmingCharacters(in: " ") }
            return names.contains(algorithm.name) ? algorithm : nil
        }
        encoder = ResponseMessageEncoder(framing: encoder.framing, compression: responseCompression)
        return nil
    }

    /// The head's application headers as the handler's metadata.
    package mutating func takeMetadata(from head: HTTPRequestHead) {
        for header in head.headers where !Self.isHTTPHeader(header.name) && !wire.isProtocolHeader(header.name) {
            metadata.addHeaderField(name: header.name, value: header.value)
        }
    }

    /// Headers that belong to HTTP rather than to the application. Told apart by first
    /// letter, so a usual request's headers cost a comparison or two each.
    private static func isHTTPHeader(_ name: String) -> Bool {
        switch name.utf8.first {
        case UInt8(ascii: "a"): name == "accept" || name == "accept-encoding"
        case UInt8(ascii: "c"): name == "content-encoding"
        case UInt8(ascii: "e"): name == "expect"
        case UInt8(ascii: "k"): name == "keep-alive"
        case UInt8(ascii: "p"): name == "proxy-connection"
        case UInt8(ascii: "t"): name == "transfer-encoding"
        case UInt8(ascii: "u"): name == "upgrade"
        default: false
        }
    }

    // MARK: Request

    /// Turns a received message (as the decoder framed it) into a request part: decompressed
    /// when it says it is compressed, or, for a body that is the message itself, when the
    /// body is. Its size as it arrived goes to the stream's wire counts (`counts`).
    package func requestPart(
        _ message: (compressed: Bool, bytes: [UInt8]), limit: Int,
        counting counts: StreamOutbound
    ) throws -> RPCRequestPart {
        counts.receivedMessage(wireBytes: message.bytes.count)
        let compressed = message.compressed || (body.isWholeBody && requestCompression != nil)
        guard compressed else { return .message(message.bytes, []) }
        guard let algorithm = requestCompression else {
            throw RPCError(code: .internal, message: "a compressed message arrived without \(encodingHeader)")
        }
        return .message(try MessageCompression.decompress(message.bytes, with: algorithm, limit: limit), .compressed)
    }

    package mutating func appendBody(_ bytes: UnsafeRawBufferPointer) throws { try body.append(bytes) }
    package mutating func nextMessage() throws -> (compressed: Bool, bytes: [UInt8])? {
        try body.next().map { ($0.flags & 0x01 != 0, $0.bytes) }
    }
    /// The request's end: a whole body's message (unless the head brought it).
    package mutating func finishBody() throws -> [UInt8]? {
        let message = try body.finish()
        return headMessage == nil ? message : nil
    }

    // MARK: Response

    /// The handler's response metadata.
    package mutating func responseHead(_ metadata: Metadata, _ perform: (ResponseAction) -> Void) {
        guard case .awaitingHead = response else { return }
        if wire.holdsHeadUntilEnd {
            response = .held(metadata, message: nil)
            return
        }
        response = .headSent
        perform(.head(wire.responseHead(metadata: metadata, extra: [], compression: encoder.compression), endsStream: false))
    }

    /// One response message, as ``ResponseMessageEncoder`` framed it.
    package mutating func responseMessage(_ encoded: BodyBytes, _ perform: (ResponseAction) -> Void) {
        switch response {
        case .awaitingHead:
            responseHead([:], perform)
            responseMessage(encoded, perform)
        case .headSent:
            perform(.body(encoded))
        case .held(let metadata, nil):
            response = .held(metadata, message: encoded)
        case .held, .ended:
            return  // a held response has one message; the executor sends no second
        }
    }

    /// The handler's status and trailers: the end of the response.
    package mutating func responseEnd(_ status: Status, trailers: Metadata, _ perform: (ResponseAction) -> Void) {
        let progress: ResponseProgress
        switch response {
        case .awaitingHead: progress = .awaitingHead
        case .headSent: progress = .headSent
        case .held(let metadata, let message): progress = .held(metadata, message: message)
        case .ended: return
        }
        response = .ended
        wire.responseEnd(status, trailers: trailers, progress: progress, compression: encoder.compression, perform)
    }

    package var isEnded: Bool {
        if case .ended = response { return true }
        return false
    }
}

/// How a handler's messages are framed for its call's protocol, on the handler's task (so
/// compression and base64 run off the event loop).
package struct ResponseMessageEncoder: Sendable {
    /// How a response body carries messages.
    package enum Framing: Sendable {
        /// In 5-byte-prefixed envelopes (gRPC, gRPC-Web, Connect's streams).
        case envelopes
        /// Envelopes in base64 text (gRPC-Web text).
        case base64Envelopes
        /// The body is the one message, compressed as a whole as the head says (Connect's
        /// unary calls).
        case wholeBody
    }

    package let framing: Framing
    /// Messages are compressed with this, when set.
    package let compression: CompressionAlgorithm?

    /// The message as the body carries it, and its size on the wire: what its length prefix
    /// says (after compression; without the prefix, before base64), or the whole body's.
    func encode(_ message: [UInt8], flags: MessageFlags) throws -> (body: BodyBytes, wireBytes: Int) {
        switch framing {
        case .wholeBody:
            // The whole body is compressed or not, as its head says: no per-message choice.
            let body = try compression.map { try MessageCompression.compress(message, with: $0) } ?? message
            return (BodyBytes(body), body.count)
        case .base64Envelopes:
            let framed = try BodyBytes.enveloping(message, compression: flags.contains(.noCompression) ? nil : compression)
            return (BodyBytes(Array(Base64.encode(framed.joined).utf8)), framed.payload.count)
        case .envelopes:
            // The message's own array: serialized once, it may be on many streams' queues.
            let framed = try BodyBytes.enveloping(message, compression: flags.contains(.noCompression) ? nil : compression)
            return (framed, framed.payload.count)
        }
    }
}
