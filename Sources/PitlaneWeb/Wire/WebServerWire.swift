import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

/// gRPC-Web's and Connect's side of a server call, over HTTP/1.1 or HTTP/2: the response's
/// content type and compression headers, CORS headers for a browser's origin, and the end
/// of the response (gRPC-Web's trailers frame, Connect's end-of-stream message, or, for a
/// Connect unary call, an HTTP status and a JSON error body).
struct WebServerWire: ServerWire {
    let wire: WireProtocol
    let codec: MessageCodec
    let requestContentType: String?
    let cors: CORSPolicy
    let origin: String?

    var holdsHeadUntilEnd: Bool {
        if case .connectUnary = wire { return true }
        return false
    }

    /// Connect's and gRPC-Web's headers, CORS and the browser's own.
    func isProtocolHeader(_ name: String) -> Bool {
        switch name.utf8.first {
        case UInt8(ascii: "a"): name.hasPrefix("access-control-")
        case UInt8(ascii: "c"): name.hasPrefix("connect-")
        case UInt8(ascii: "o"): name == "origin"
        case UInt8(ascii: "r"): name == "referer"
        case UInt8(ascii: "s"): name == "sec-fetch-mode" || name == "sec-fetch-site" || name == "sec-fetch-dest"
        case UInt8(ascii: "x"): name == "x-grpc-web" || name == "x-user-agent"
        default: false
        }
    }

    func responseHead(metadata: Metadata, extra: [(name: String, value: String)], compression: CompressionAlgorithm?) -> HTTPResponseHead {
        head(status: 200, metadata: metadata, extra: extra, compression: compression)
    }

    func responseEnd(
        _ status: Status, trailers: Metadata, progress: ResponseProgress, compression: CompressionAlgorithm?,
        _ perform: (ResponseAction) -> Void
    ) {
        switch wire {
        case .grpc:
            preconditionFailure("gRPC calls carry GRPCServerWire")
        case .grpcWeb(let text):
            if case .awaitingHead = progress {
                perform(.head(head(status: 200, metadata: [:], extra: [], compression: compression), endsStream: false))
            }
            let frame = GRPCWebWire.trailersFrame(GRPCServerWire.statusFields(status) + trailers.headerFields)
            perform(.body(BodyBytes(text ? Array(Base64.encode(frame).utf8) : frame)))
            perform(.end(trailers: []))
        case .connectStreaming:
            if case .awaitingHead = progress {
                perform(.head(head(status: 200, metadata: [:], extra: [], compression: compression), endsStream: false))
            }
            let json = ConnectWire.endOfStream(status, trailers: trailers)
            perform(.body(BodyBytes(enveloping: json, flags: 0x02)))
            perform(.end(trailers: []))
        case .connectUnary:
            var metadata = Metadata()
            var message: BodyBytes?
            if case .held(let held, let heldMessage) = progress { (metadata, message) = (held, heldMessage) }
            let trailerFields = trailers.headerFields.map { (name: "trailer-" + $0.name, value: $0.value) }
            if status.code == .ok, let message {
                var extra = trailerFields
                if let compression { extra.append(("content-encoding", compression.name)) }
                perform(.head(head(status: 200, metadata: metadata, extra: extra, compression: compression), endsStream: message.isEmpty))
                if !message.isEmpty {
                    perform(.body(message))
                    perform(.end(trailers: []))
                }
            } else {
                let failure = status.code == .ok ? Status(code: .internal, message: "the handler sent no response message") : status
                let errorBody = ConnectWire.errorBody(failure, trailers: trailers)
                var errorHead = head(
                    status: ConnectWire.httpStatus(for: failure.code), metadata: metadata, extra: trailerFields,
                    compression: compression)
                errorHead.headers[0].value = "application/json"  // the content type comes first
                perform(.head(errorHead, endsStream: false))
                perform(.body(BodyBytes(errorBody)))
                perform(.end(trailers: []))
            }
        }
    }

    /// A response head: content type first, then compression, metadata, `extra`, and CORS.
    private func head(
        status: Int, metadata: Metadata, extra: [(name: String, value: String)],
        compression: CompressionAlgorithm?
    ) -> HTTPResponseHead {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(3 + metadata.count + extra.count)
        headers.append(("content-type", wire.responseContentType(codec: codec, requested: requestContentType)))
        switch wire {
        case .grpc, .grpcWeb:
            headers.append(("grpc-accept-encoding", MessageCompression.acceptEncoding))
            if let compression { headers.append(("grpc-encoding", compression.name)) }
        case .connectStreaming:
            headers.append(("connect-accept-encoding", Self.connectAcceptEncoding))
            if let compression { headers.append(("connect-content-encoding", compression.name)) }
        case .connectUnary:
            headers.append(("accept-encoding", Self.connectAcceptEncoding))
        }
        headers += metadata.headerFields
        headers += extra
        if origin != nil {
            headers += cors.responseHeaders(origin: origin, exposing: headers.map(\.0))
        }
        return HTTPResponseHead(status: status, headers: headers)
    }

    private static let connectAcceptEncoding = "gzip, deflate"
}
