import PitlaneCore
import PitlaneProtobuf

/// The protocol a client speaks to its server, over HTTP/2.
public enum ClientWireProtocol: Sendable, Hashable {
    /// gRPC (`application/grpc`): every RPC kind.
    case grpc
    /// gRPC-Web (`application/grpc-web+proto`), as browsers and Envoy's filter speak it: unary
    /// and server streaming.
    case grpcWeb
    /// The Connect protocol: unary calls as plain POSTs (`application/proto` or `json`),
    /// streams in envelopes (`application/connect+proto` or `+json`).
    case connect
}

/// One RPC as the client's protocol sees it: the request head, how request messages are
/// framed, and how the response (head, body, trailers) becomes the core's response parts.
/// Loop-confined.
struct ClientCall {
    private enum Wire {
        case grpc
        case grpcWeb
        case connectUnary
        case connectStreaming
    }

    private let wire: Wire
    let codec: MessageCodec
    /// How the request's messages are framed; handed to the writer.
    let encoder: RequestMessageEncoder
    private var body: MessageBodyDecoder
    private var responseCompression: CompressionAlgorithm?
    private var httpStatus = 0
    private var headers: [(name: String, value: String)] = []
    private var finished = false
    private let maxMessageBytes: Int

    init(protocol wireProtocol: ClientWireProtocol, codec: MessageCodec, kind: RPCKind,
         compression: CompressionAlgorithm?, maxMessageBytes: Int) {
        switch wireProtocol {
        case .grpc: wire = .grpc
        case .grpcWeb: wire = .grpcWeb
        case .connect: wire = kind == .unary ? .connectUnary : .connectStreaming
        }
        self.codec = codec
        self.maxMessageBytes = maxMessageBytes
        encoder = RequestMessageEncoder(enveloped: wire != .connectUnary, compression: compression)
        body = MessageBodyDecoder(wire == .connectUnary ? .wholeBody : .envelopes(acceptedFlags: wire == .grpcWeb ? 0x81 : wire == .grpc ? 0x01 : 0x03), maxMessageBytes: maxMessageBytes)
    }

    var isEnded: Bool { finished }

    // MARK: Request

    /// The request head's fields after the pseudo-headers.
    func requestHeaders(metadata: Metadata, timeout: Duration?) -> [(name: String, value: String)] {
        let json = codec == .json
        var fields: [(name: String, value: String)]
        switch wire {
        case .grpc, .grpcWeb:
            let type = wire == .grpc ? "application/grpc" : "application/grpc-web"
            fields = [("content-type", type + (json ? "+json" : "+proto")), ("te", "trailers"),
                      ("grpc-accept-encoding", MessageCompression.acceptEncoding)]
            if wire == .grpcWeb { fields.append(("x-grpc-web", "1")) }
            if let timeout { fields.append(("grpc-timeout", GRPCTimeout.format(timeout))) }
            if let compression = encoder.compression { fields.append(("grpc-encoding", compression.name)) }
        case .connectUnary:
            fields = [("content-type", json ? "application/json" : "application/proto"), ("connect-protocol-version", "1"),
                      ("accept-encoding", "gzip, deflate")]
            if let compression = encoder.compression { fields.append(("content-encoding", compression.name)) }
        case .connectStreaming:
            fields = [("content-type", json ? "application/connect+json" : "application/connect+proto"),
                      ("connect-protocol-version", "1"), ("connect-accept-encoding", "gzip, deflate")]
            if let compression = encoder.compression { fields.append(("connect-content-encoding", compression.name)) }
        }
        if wire == .connectUnary || wire == .connectStreaming, let timeout {
            let milliseconds = max(1, (timeout.components.seconds * 1000) + (timeout.components.attoseconds / 1_000_000_000_000_000))
            fields.append(("connect-timeout-ms", String(min(milliseconds, 9_999_999_999))))
        }
        fields.append(("user-agent", "grpc-swift-pitlane/0.1"))
        return fields + metadata.headerFields
    }

    // MARK: Response

    /// Response headers, or trailers: the first HEADERS frame is the head (ending the stream
    /// when the response has no body); a later one carries gRPC's status.
    mutating func receivedHeaders(_ fields: [(name: String, value: String)], endStream: Bool, counting counts: StreamOutbound,
                                  _ emit: (RPCResponsePart) -> Void) {
        guard !finished else { return }
        if httpStatus != 0 {
            // Trailers: gRPC's, or those of a gRPC-Web server that sends real ones.
            return finish(Self.grpcStatus(in: fields), Self.metadata(fields), emit)
        }
        httpStatus = fields.first { $0.name == ":status" }.flatMap { Int($0.value) } ?? 0
        headers = fields
        if httpStatus == 0 { return finish(Status(code: .internal, message: "the response has no :status"), [:], emit) }
        switch wire {
        case .grpc, .grpcWeb:
            guard httpStatus == 200 else {
                return finish(Status(code: ConnectWire.code(forHTTP: httpStatus), message: "HTTP status \(httpStatus)"), [:], emit)
            }
            if value("grpc-status") != nil || endStream {
                return finish(Self.grpcStatus(in: fields), Self.metadata(fields), emit)  // trailers-only
            }
            let expected = wire == .grpc ? "application/grpc" : "application/grpc-web"
            guard value("content-type")?.hasPrefix(expected) == true else {
                return finish(Status(code: .unknown, message: "the response is not \(expected) (content-type \(value("content-type") ?? "none"))"), [:], emit)
            }
            guard readCompression("grpc-encoding", emit) else { return }
            emit(.metadata(Self.metadata(fields)))
        case .connectStreaming:
            guard httpStatus == 200 else {
                return finish(Status(code: ConnectWire.code(forHTTP: httpStatus), message: "HTTP status \(httpStatus)"), [:], emit)
            }
            guard readCompression("connect-content-encoding", emit) else { return }
            emit(.metadata(Self.metadata(fields)))
            if endStream { finish(Status(code: .internal, message: "the stream ended without its end-of-stream message"), [:], emit) }
        case .connectUnary:
            guard readCompression("content-encoding", emit) else { return }
            if endStream { receivedEnd(counting: counts, emit) }
        }
    }

    /// Response body bytes; each message's size as it arrived goes to `counts`.
    mutating func receivedData(_ data: UnsafeRawBufferPointer, counting counts: StreamOutbound,
                               _ emit: (RPCResponsePart) -> Void) throws {
        guard !finished else { return }
        try body.append(data)
        while !finished, let frame = try body.next() {
            try deliver(frame, counts, emit)
        }
    }

    /// Bytes held for a message not yet complete.
    var bufferedBytes: Int { body.bufferedBytes }

    private mutating func deliver(_ frame: (flags: UInt8, bytes: [UInt8]), _ counts: StreamOutbound,
                                  _ emit: (RPCResponsePart) -> Void) throws {
        switch (wire, frame.flags) {
        case (.grpcWeb, let flags) where flags & GRPCWebWire.trailersFlag != 0:
            let fields = GRPCWebWire.parseTrailers(frame.bytes)
            finish(Self.grpcStatus(in: fields), Self.metadata(fields), emit)
        case (.connectStreaming, let flags) where flags & 0x02 != 0:
            let bytes = flags & 0x01 != 0 ? try decompress(frame.bytes) : frame.bytes
            let (status, trailers) = ConnectWire.parseEndOfStream(bytes)
            finish(status, trailers, emit)
        case (_, let flags) where flags & 0x01 != 0:
            counts.receivedMessage(wireBytes: frame.bytes.count)
            emit(.message(try decompress(frame.bytes), .compressed))
        default:
            counts.receivedMessage(wireBytes: frame.bytes.count)
            emit(.message(frame.bytes, []))
        }
    }

    private func decompress(_ bytes: [UInt8]) throws -> [UInt8] {
        guard let algorithm = responseCompression else {
            throw RPCError(code: .internal, message: "a compressed message arrived without its encoding header")
        }
        return try MessageCompression.decompress(bytes, with: algorithm, limit: maxMessageBytes)
    }

    /// END_STREAM without trailers: Connect unary's whole body is in (its size goes to
    /// `counts`), or the stream ended early.
    mutating func receivedEnd(counting counts: StreamOutbound, _ emit: (RPCResponsePart) -> Void) {
        guard !finished else { return }
        guard wire == .connectUnary else {
            return finish(Status(code: .internal, message: "the server ended the stream without a status"), [:], emit)
        }
        var bytes: [UInt8]
        do {
            bytes = try body.finish() ?? []
            if httpStatus == 200 { counts.receivedMessage(wireBytes: bytes.count) }
            if httpStatus == 200, let algorithm = responseCompression {
                bytes = try MessageCompression.decompress(bytes, with: algorithm, limit: maxMessageBytes)
            }
        } catch {
            return finish(RPCError.from(error).status, [:], emit)
        }
        let (metadata, trailers) = Self.splitConnectHeaders(headers)
        guard httpStatus == 200 else {
            let status = ConnectWire.parseError(bytes) ?? Status(code: ConnectWire.code(forHTTP: httpStatus), message: "HTTP status \(httpStatus)")
            var all = metadata
            all.add(contentsOf: trailers)
            return finish(status, all, emit)
        }
        emit(.metadata(metadata))
        emit(.message(bytes, responseCompression == nil ? [] : .compressed))
        finish(.ok, trailers, emit)
    }

    private mutating func finish(_ status: Status, _ trailers: Metadata, _ emit: (RPCResponsePart) -> Void) {
        finished = true
        emit(.status(status, trailers))
    }

    private mutating func readCompression(_ header: String, _ emit: (RPCResponsePart) -> Void) -> Bool {
        guard let encoding = value(header), encoding != "identity" else { return true }
        guard let algorithm = CompressionAlgorithm(name: encoding) else {
            finish(Status(code: .internal, message: "the server used \(header) \(encoding), which was not offered"), [:], emit)
            return false
        }
        responseCompression = algorithm
        return true
    }

    private func value(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    private static func metadata(_ fields: [(name: String, value: String)]) -> Metadata {
        var metadata = Metadata()
        for field in fields where !isProtocolField(field.name) { metadata.addHeaderField(name: field.name, value: field.value) }
        return metadata
    }

    private static func isProtocolField(_ name: String) -> Bool {
        name.hasPrefix("connect-") || name.hasPrefix("access-control-") || ["content-encoding", "accept-encoding", "vary", "date", "server"].contains(name)
    }

    /// Connect unary: headers are metadata, `trailer-`-prefixed ones trailers.
    private static func splitConnectHeaders(_ fields: [(name: String, value: String)]) -> (Metadata, Metadata) {
        let trailers = fields.filter { $0.name.hasPrefix("trailer-") }.map { (name: String($0.name.dropFirst(8)), value: $0.value) }
        return (metadata(fields.filter { !$0.name.hasPrefix("trailer-") }), metadata(trailers))
    }

    static func grpcStatus(in fields: [(name: String, value: String)]) -> Status {
        guard let text = fields.first(where: { $0.name == "grpc-status" })?.value, let number = Int(text),
              let code = Status.Code(rawValue: number) else {
            return Status(code: .unknown, message: "the server sent no valid grpc-status")
        }
        return Status(code: code, message: fields.first { $0.name == "grpc-message" }.map { PercentEncoding.decode($0.value) } ?? "")
    }
}

/// How a client's request messages are framed, on the calling task.
struct RequestMessageEncoder: Sendable {
    /// In 5-byte envelopes (all but Connect's unary calls, whose body is the message).
    let enveloped: Bool
    let compression: CompressionAlgorithm?

    /// The message as the body carries it, and its size on the wire: what its length prefix
    /// says (after compression, without the prefix), or the whole body's.
    func encode(_ message: [UInt8], flags: MessageFlags) throws -> (body: BodyBytes, wireBytes: Int) {
        guard enveloped else {
            let body = try compression.map { try MessageCompression.compress(message, with: $0) } ?? message
            return (BodyBytes(body), body.count)
        }
        let framed = try BodyBytes.enveloping(message, compression: flags.contains(.noCompression) ? nil : compression)
        return (framed, framed.payload.count)
    }
}
