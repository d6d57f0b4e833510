import PitlaneCore
import PitlaneHTTP2

extension ClientWireProtocol {
    /// gRPC-Web (`application/grpc-web+proto`), as browsers and Envoy's filter speak it: unary
    /// and server streaming.
    public static let grpcWeb = ClientWireProtocol("grpcWeb") { _ in WebClientWire.grpcWeb }

    /// The Connect protocol: unary calls as plain POSTs (`application/proto` or `json`),
    /// streams in envelopes (`application/connect+proto` or `+json`).
    public static let connect = ClientWireProtocol("connect") { kind in
        kind == .unary ? WebClientWire.connectUnary : WebClientWire.connectStreaming
    }
}

/// gRPC-Web's and Connect's side of a client call, over HTTP/2.
enum WebClientWire: ClientWire {
    case grpcWeb
    /// A unary call: the body is the message, errors are an HTTP status and a JSON body.
    case connectUnary
    /// A streaming call: enveloped messages and an end-of-stream message.
    case connectStreaming

    var envelopesRequests: Bool { self != .connectUnary }

    var responseLayout: MessageBodyDecoder.Layout {
        switch self {
        case .grpcWeb: .envelopes(acceptedFlags: 0x81)
        case .connectUnary: .wholeBody
        case .connectStreaming: .envelopes(acceptedFlags: 0x03)
        }
    }

    func requestFields(codec: MessageCodec, compression: CompressionAlgorithm?, timeout: Duration?) -> [(name: String, value: String)] {
        let json = codec == .json
        var fields: [(name: String, value: String)]
        switch self {
        case .grpcWeb:
            fields = GRPCClientWire.requestFields(
                contentType: "application/grpc-web", codec: codec, compression: compression, timeout: timeout)
            fields.insert(("x-grpc-web", "1"), at: 3)
            return fields
        case .connectUnary:
            fields = [
                ("content-type", json ? "application/json" : "application/proto"), ("connect-protocol-version", "1"),
                ("accept-encoding", "gzip, deflate"),
            ]
            if let compression { fields.append(("content-encoding", compression.name)) }
        case .connectStreaming:
            fields = [
                ("content-type", json ? "application/connect+json" : "application/connect+proto"),
                ("connect-protocol-version", "1"), ("connect-accept-encoding", "gzip, deflate"),
            ]
            if let compression { fields.append(("connect-content-encoding", compression.name)) }
        }
        if let timeout {
            let milliseconds = max(1, (timeout.components.seconds * 1000) + (timeout.components.attoseconds / 1_000_000_000_000_000))
            fields.append(("connect-timeout-ms", String(min(milliseconds, 9_999_999_999))))
        }
        return fields
    }

    func receivedHead(_ call: inout ClientCall, endStream: Bool, counting counts: StreamOutbound, _ emit: (RPCResponsePart) -> Void) {
        switch self {
        case .grpcWeb:
            GRPCClientWire.receivedHead(&call, expecting: "application/grpc-web", endStream: endStream, emit)
        case .connectStreaming:
            guard call.httpStatus == 200 else {
                return call.finish(
                    Status(code: ClientCall.code(forHTTP: call.httpStatus), message: "HTTP status \(call.httpStatus)"), [:], emit)
            }
            guard call.readCompression("connect-content-encoding", emit) else { return }
            emit(.metadata(ClientCall.metadata(call.headers)))
            if endStream { call.finish(Status(code: .internal, message: "the stream ended without its end-of-stream message"), [:], emit) }
        case .connectUnary:
            guard call.readCompression("content-encoding", emit) else { return }
            if endStream { receivedEnd(&call, counting: counts, emit) }
        }
    }

    func receivedEndFrame(
        _ frame: (flags: UInt8, bytes: [UInt8]), in call: inout ClientCall,
        _ emit: (RPCResponsePart) -> Void
    ) throws -> Bool {
        switch self {
        case .grpcWeb where frame.flags & GRPCWebWire.trailersFlag != 0:
            let fields = GRPCWebWire.parseTrailers(frame.bytes)
            call.finish(ClientCall.grpcStatus(in: fields), ClientCall.metadata(fields), emit)
            return true
        case .connectStreaming where frame.flags & 0x02 != 0:
            let bytes = frame.flags & 0x01 != 0 ? try call.decompress(frame.bytes) : frame.bytes
            let (status, trailers) = ConnectWire.parseEndOfStream(bytes)
            call.finish(status, trailers, emit)
            return true
        default:
            return false
        }
    }

    func receivedEnd(_ call: inout ClientCall, counting counts: StreamOutbound, _ emit: (RPCResponsePart) -> Void) {
        guard self == .connectUnary else {
            return call.finish(Status(code: .internal, message: "the server ended the stream without a status"), [:], emit)
        }
        var bytes: [UInt8]
        do {
            bytes = try call.finishBody() ?? []
            if call.httpStatus == 200 { counts.receivedMessage(wireBytes: bytes.count) }
            if call.httpStatus == 200, let algorithm = call.responseCompression {
                bytes = try MessageCompression.decompress(bytes, with: algorithm, limit: call.maxMessageBytes)
            }
        } catch {
            return call.finish(RPCError.from(error).status, [:], emit)
        }
        let (metadata, trailers) = Self.splitConnectHeaders(call.headers)
        guard call.httpStatus == 200 else {
            let status =
                ConnectWire.parseError(bytes)
                ?? Status(code: ClientCall.code(forHTTP: call.httpStatus), message: "HTTP status \(call.httpStatus)")
            var all = metadata
            all.add(contentsOf: trailers)
            return call.finish(status, all, emit)
        }
        emit(.metadata(metadata))
        emit(.message(bytes, call.responseCompression == nil ? [] : .compressed))
        call.finish(.ok, trailers, emit)
    }

    /// Connect unary: headers are metadata, `trailer-`-prefixed ones trailers.
    private static func splitConnectHeaders(_ fields: [(name: String, value: String)]) -> (Metadata, Metadata) {
        let trailers = fields.filter { $0.name.hasPrefix("trailer-") }.map { (name: String($0.name.dropFirst(8)), value: $0.value) }
        return (ClientCall.metadata(fields.filter { !$0.name.hasPrefix("trailer-") }), ClientCall.metadata(trailers))
    }
}
