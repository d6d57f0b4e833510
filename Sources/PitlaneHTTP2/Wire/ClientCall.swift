import PitlaneCore
import PitlaneProtobuf

/// The wire protocol a client speaks to its server, over HTTP/2: gRPC (``grpc``, here), or
/// gRPC-Web and Connect (PitlaneWeb's `.grpcWeb` and `.connect`).
public struct ClientWireProtocol: Sendable, Hashable, CustomStringConvertible {
    /// The protocol's name, for messages and test names.
    public let description: String
    /// One call's side of the protocol, made per call from its kind.
    package let makeWire: @Sendable (RPCKind) -> any ClientWire

    /// A protocol named `name` whose calls speak through `makeWire`'s wires.
    package init(_ name: String, makeWire: @escaping @Sendable (RPCKind) -> any ClientWire) {
        description = name
        self.makeWire = makeWire
    }

    /// gRPC (`application/grpc`): every RPC kind.
    public static let grpc = ClientWireProtocol("grpc") { _ in GRPCClientWire() }

    /// Two protocols are equal when their names are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.description == rhs.description }
    /// Hashes the protocol's name.
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}

/// What differs between a client's wire protocols in one call: its request head, its bodies'
/// framing, how its response head and its end frames are read. `ClientCall` does the rest,
/// the same for all. A value per call.
package protocol ClientWire: Sendable {
    /// Whether request messages travel in 5-byte envelopes (else the body is the message).
    var envelopesRequests: Bool { get }
    /// How the response body carries messages.
    var responseLayout: MessageBodyDecoder.Layout { get }
    /// The request head's protocol fields (content type, compression, deadline).
    func requestFields(codec: MessageCodec, compression: CompressionAlgorithm?, timeout: Duration?) -> [(name: String, value: String)]
    /// The response's first HEADERS (its status 200 or not, its content type, compression),
    /// in `call.headers`; emits its metadata or ends the call.
    func receivedHead(_ call: inout ClientCall, endStream: Bool, counting counts: StreamOutbound, _ emit: (RPCResponsePart) -> Void)
    /// A body frame that is the protocol's own end (gRPC-Web's trailers, Connect's
    /// end-of-stream message): handled, true; a message: false, for the call to deliver.
    func receivedEndFrame(
        _ frame: (flags: UInt8, bytes: [UInt8]), in call: inout ClientCall,
        _ emit: (RPCResponsePart) -> Void
    ) throws -> Bool
    /// END_STREAM without trailers.
    func receivedEnd(_ call: inout ClientCall, counting counts: StreamOutbound, _ emit: (RPCResponsePart) -> Void)
}

extension ClientWire {
    package func receivedEndFrame(
        _ frame: (flags: UInt8, bytes: [UInt8]), in call: inout ClientCall,
        _ emit: (RPCResponsePart) -> Void
    ) throws -> Bool { false }

    /// A stream that ends without trailers ended early.
    package func receivedEnd(_ call: inout ClientCall, counting counts: StreamOutbound, _ emit: (RPCResponsePart) -> Void) {
        call.finish(Status(code: .internal, message: "the server ended the stream without a status"), [:], emit)
    }
}

/// gRPC's side of a client call: `application/grpc`, the status in trailers (or a
/// trailers-only response).
package struct GRPCClientWire: ClientWire {
    package var envelopesRequests: Bool { true }
    package var responseLayout: MessageBodyDecoder.Layout { .envelopes(acceptedFlags: 0x01) }

    package init() {}

    package func requestFields(
        codec: MessageCodec, compression: CompressionAlgorithm?, timeout: Duration?
    ) -> [(name: String, value: String)] {
        Self.requestFields(contentType: "application/grpc", codec: codec, compression: compression, timeout: timeout)
    }

    /// gRPC's and gRPC-Web's request fields.
    package static func requestFields(
        contentType: String, codec: MessageCodec, compression: CompressionAlgorithm?,
        timeout: Duration?
    ) -> [(name: String, value: String)] {
        var fields = [
            ("content-type", contentType + (codec == .json ? "+json" : "+proto")), ("te", "trailers"),
            ("grpc-accept-encoding", MessageCompression.acceptEncoding),
        ]
        if let timeout { fields.append(("grpc-timeout", GRPCTimeout.format(timeout))) }
        if let compression { fields.append(("grpc-encoding", compression.name)) }
        return fields
    }

    package func receivedHead(
        _ call: inout ClientCall, endStream: Bool, counting counts: StreamOutbound,
        _ emit: (RPCResponsePart) -> Void
    ) {
        Self.receivedHead(&call, expecting: "application/grpc", endStream: endStream, emit)
    }

    /// gRPC's and gRPC-Web's response head: 200, then a trailers-only status or the content
    /// type `expected` and compression.
    package static func receivedHead(
        _ call: inout ClientCall, expecting expected: String, endStream: Bool,
        _ emit: (RPCResponsePart) -> Void
    ) {
        guard call.httpStatus == 200 else {
            return call.finish(
                Status(code: ClientCall.code(forHTTP: call.httpStatus), message: "HTTP status \(call.httpStatus)"), [:], emit)
        }
        if call.value("grpc-status") != nil || endStream {
            return call.finish(ClientCall.grpcStatus(in: call.headers), ClientCall.metadata(call.headers), emit)  // trailers-only
        }
        guard call.value("content-type")?.hasPrefix(expected) == true else {
            return call.finish(
                Status(code: .unknown, message: "the response is not \(expected) (content-type \(call.value("content-type") ?? "none"))"),
                [:], emit)
        }
        guard call.readCompression("grpc-encoding", emit) else { return }
        emit(.metadata(ClientCall.metadata(call.headers)))
    }
}

/// One RPC as the client's wire protocol frames it: the request head, how request messages
/// are framed, and how the response (head, body, trailers) becomes the core's response
/// parts. What differs between protocols is its ``ClientWire``. Loop-confined.
package struct ClientCall {
    package let wire: any ClientWire
    package let codec: MessageCodec
    /// How the request's messages are framed; handed to the writer.
    package let encoder: RequestMessageEncoder
    package private(set) var body: MessageBodyDecoder
    package private(set) var responseCompression: CompressionAlgorithm?
    /// The response's HTTP status, once its head arrived.
    package private(set) var httpStatus = 0
    /// The response head's fields.
    package private(set) var headers: [(name: String, value: String)] = []
    private var finished = false
    package let maxMessageBytes: Int

    init(
        protocol wireProtocol: ClientWireProtocol, codec: MessageCodec, kind: RPCKind,
        compression: CompressionAlgorithm?, maxMessageBytes: Int
    ) {
        let wire = wireProtocol.makeWire(kind)
        self.wire = wire
        self.codec = codec
        self.maxMessageBytes = maxMessageBytes
        encoder = RequestMessageEncoder(enveloped: wire.envelopesRequests, compression: compression)
        body = MessageBodyDecoder(wire.responseLayout, maxMessageBytes: maxMessageBytes)
    }

    var isEnded: Bool { finished }

    // MARK: Request

    /// The request head's fields after the pseudo-headers.
    func requestHeaders(metadata: Metadata, timeout: Duration?) -> [(name: String, value: String)] {
        var fields = wire.requestFields(codec: codec, compression: encoder.compression, timeout: timeout)
        fields.append(("user-agent", "grpc-swift-pitlane/0.1"))
        return fields + metadata.headerFields
    }

    // MARK: Response

    /// Response headers, or trailers: the first HEADERS frame is the head (ending the stream
    /// when the response has no body); a later one carries gRPC's status.
    mutating func receivedHeaders(
        _ fields: [(name: String, value: String)], endStream: Bool, counting counts: StreamOutbound,
        _ emit: (RPCResponsePart) -> Void
    ) {
        guard !finished else { return }
        if httpStatus != 0 {
            // Trailers: gRPC's, or those of a gRPC-Web server that sends real ones.
            return finish(Self.grpcStatus(in: fields), Self.metadata(fields), emit)
        }
        httpStatus = fields.first { $0.name == ":status" }.flatMap { Int($0.value) } ?? 0
        headers = fields
        if httpStatus == 0 { return finish(Status(code: .internal, message: "the response has no :status"), [:], emit) }
        wire.receivedHead(&self, endStream: endStream, counting: counts, emit)
    }

    /// Response body bytes; each message's size as it arrived goes to `counts`.
    mutating func receivedData(
        _ data: UnsafeRawBufferPointer, counting counts: StreamOutbound,
        _ emit: (RPCResponsePart) -> Void
    ) throws {
        guard !finished else { return }
        try body.append(data)
        while !finished, let frame = try body.next() {
            if try wire.receivedEndFrame(frame, in: &self, emit) { continue }
            counts.receivedMessage(wireBytes: frame.bytes.count)
            if frame.flags & 0x01 != 0 {
                emit(.message(try decompress(frame.bytes), .compressed))
            } else {
                emit(.message(frame.bytes, []))
            }
        }
    }

    /// Bytes held for a message not yet complete.
    var bufferedBytes: Int { body.bufferedBytes }

    /// A compressed message's bytes, decompressed with the response's encoding.
    package func decompress(_ bytes: [UInt8]) throws -> [UInt8] {
        guard let algorithm = responseCompression else {
            throw RPCError(code: .internal, message: "a compressed message arrived without its encoding header")
        }
        return try MessageCompression.decompress(bytes, with: algorithm, limit: maxMessageBytes)
    }

    /// END_STREAM without trailers.
    mutating func receivedEnd(counting counts: StreamOutbound, _ emit: (RPCResponsePart) -> Void) {
        guard !finished else { return }
        wire.receivedEnd(&self, counting: counts, emit)
    }

    /// The whole body, once its end arrived (for a protocol whose body is one message).
    package mutating func finishBody() throws -> [UInt8]? { try body.finish() }

    /// The call's end: its status and trailers.
    package mutating func finish(_ status: Status, _ trailers: Metadata, _ emit: (RPCResponsePart) -> Void) {
        finished = true
        emit(.status(status, trailers))
    }

    /// Reads the response's compression from `header`; false (the call ended) when it is one
    /// the client did not offer.
    package mutating func readCompression(_ header: String, _ emit: (RPCResponsePart) -> Void) -> Bool {
        guard let encoding = value(header), encoding != "identity" else { return true }
        guard let algorithm = CompressionAlgorithm(name: encoding) else {
            finish(Status(code: .internal, message: "the server used \(header) \(encoding), which was not offered"), [:], emit)
            return false
        }
        responseCompression = algorithm
        return true
    }

    /// The response head's first value of `name`.
    package func value(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// Fields as metadata, without the protocols' own.
    package static func metadata(_ fields: [(name: String, value: String)]) -> Metadata {
        var metadata = Metadata()
        for field in fields where !isProtocolField(field.name) { metadata.addHeaderField(name: field.name, value: field.value) }
        return metadata
    }

    private static func isProtocolField(_ name: String) -> Bool {
        name.hasPrefix("connect-") || name.hasPrefix("access-control-")
            || ["content-encoding", "accept-encoding", "vary", "date", "server"].contains(name)
    }

    /// `grpc-status` and `grpc-message` of `fields`.
    package static func grpcStatus(in fields: [(name: String, value: String)]) -> Status {
        guard let text = fields.first(where: { $0.name == "grpc-status" })?.value, let number = Int(text),
            let code = Status.Code(rawValue: number)
        else {
            return Status(code: .unknown, message: "the server sent no valid grpc-status")
        }
        return Status(code: code, message: fields.first { $0.name == "grpc-message" }.map { PercentEncoding.decode($0.value) } ?? "")
    }

    /// The status code for an HTTP status when the response says nothing more: the table
    /// gRPC and Connect share (gRPC's http-grpc-status-mapping.md).
    package static func code(forHTTP status: Int) -> Status.Code {
        switch status {
        case 400: .internal
        case 401: .unauthenticated
        case 403: .permissionDenied
        case 404: .unimplemented
        case 429, 502, 503, 504: .unavailable
        default: .unknown
        }
    }
}

/// How a client's request messages are framed, on the calling task.
package struct RequestMessageEncoder: Sendable {
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
