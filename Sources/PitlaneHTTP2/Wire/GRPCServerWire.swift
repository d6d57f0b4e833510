import PitlaneCore

/// gRPC's side of a server call (`application/grpc`, PROTOCOL-HTTP2.md): the response head
/// names the content type and compression, and the status travels in HTTP trailers, or in
/// the only HEADERS frame of a trailers-only response.
package struct GRPCServerWire: ServerWire {
    package var holdsHeadUntilEnd: Bool { false }

    /// None beyond those ``Metadata`` keeps out of every call's metadata (`grpc-*`, `te`,
    /// `content-type`).
    package func isProtocolHeader(_ name: String) -> Bool { false }

    /// The content types that are gRPC over HTTP/2 (Pitlane's codec for them is protobuf).
    static let contentTypes: Set<String> = ["application/grpc", "application/grpc+proto"]

    /// Whether a request speaks gRPC: a POST whose content type is gRPC's, parameters
    /// (`; charset=…`) and case aside.
    package static func isGRPC(_ head: HTTPRequestHead) -> Bool {
        guard head.method == "POST", let contentType = head.header("content-type") else { return false }
        // Nearly every client sends exactly this: no set lookup, no copy.
        if contentType == "application/grpc" { return true }
        return contentTypes.contains(HTTPRequestHead.mediaType(contentType))
    }

    /// A gRPC request's call (``isGRPC(_:)`` said it is one): its method from the path, its
    /// deadline from `grpc-timeout`, compression and metadata.
    package static func start(_ head: HTTPRequestHead, limits: ServerCallLimits) -> ServerCall.Start {
        let (path, query) = head.pathAndQuery
        guard let descriptor = MethodDescriptor(path: query.isEmpty ? head.path : String(path)) else {
            return .respond(HTTPResponseHead(status: 404, headers: []), body: [])
        }
        var call = ServerCall(
            wire: GRPCServerWire(), codec: .protobuf, descriptor: descriptor, layout: .envelopes(acceptedFlags: 0x01),
            framing: .envelopes, encodingHeader: "grpc-encoding", maxMessageBytes: limits.maxMessageBytes
        )
        if let failure = call.readGRPCHead(head, responseCompression: limits.responseCompression) { return .reject(call, failure) }
        return .serve(call)
    }

    /// What a server without other protocols answers a request that is not gRPC.
    package static func refuse(_ head: HTTPRequestHead) -> ServerCall.Start {
        guard head.method == "POST" else {
            return .respond(HTTPResponseHead(status: 405, headers: [("allow", "POST")]), body: [])
        }
        return .respond(HTTPResponseHead(status: 415, headers: [("accept-post", "application/grpc, application/grpc+proto")]), body: [])
    }

    /// Content type, compression, metadata, `extra`.
    package func responseHead(
        metadata: Metadata, extra: [(name: String, value: String)], compression: CompressionAlgorithm?
    ) -> HTTPResponseHead {
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(3 + metadata.count + extra.count)
        headers.append(("content-type", "application/grpc"))
        headers.append(("grpc-accept-encoding", MessageCompression.acceptEncoding))
        if let compression { headers.append(("grpc-encoding", compression.name)) }
        headers += metadata.headerFields
        headers += extra
        return HTTPResponseHead(status: 200, headers: headers)
    }

    package func responseEnd(
        _ status: Status, trailers: Metadata, progress: ResponseProgress, compression: CompressionAlgorithm?,
        _ perform: (ResponseAction) -> Void
    ) {
        let fields = Self.statusFields(status) + trailers.headerFields
        if case .headSent = progress {
            perform(.end(trailers: fields))
        } else {
            // Trailers-only: the status travels in the only HEADERS frame.
            perform(.head(responseHead(metadata: [:], extra: fields, compression: compression), endsStream: true))
        }
    }

    /// `grpc-status` and, unless empty, `grpc-message`.
    package static func statusFields(_ status: Status) -> [(name: String, value: String)] {
        var fields = [(name: "grpc-status", value: String(status.code.rawValue))]
        if !status.message.isEmpty { fields.append(("grpc-message", PercentEncoding.encode(status.message))) }
        return fields
    }
}

/// What every wire protocol's calls share of the server's settings.
package struct ServerCallLimits: Sendable {
    /// The largest request message accepted, in bytes.
    package var maxMessageBytes: Int
    /// Compress responses with this when the client accepts it.
    package var responseCompression: CompressionAlgorithm?

    package init(maxMessageBytes: Int, responseCompression: CompressionAlgorithm?) {
        self.maxMessageBytes = maxMessageBytes
        self.responseCompression = responseCompression
    }
}

extension ServerCall {
    /// gRPC's and gRPC-Web's head: `grpc-timeout`, compression (`grpc-encoding`,
    /// `grpc-accept-encoding`) and metadata; a status when the head is unusable.
    package mutating func readGRPCHead(_ head: HTTPRequestHead, responseCompression: CompressionAlgorithm?) -> Status? {
        if let text = head.header("grpc-timeout") {
            guard let duration = GRPCTimeout.parse(text) else {
                return Status(code: .internal, message: "malformed grpc-timeout \(text)")
            }
            timeout = duration
        }
        if let failure = negotiateCompression(
            request: head.header("grpc-encoding"), encodingHeader: "grpc-encoding",
            accepted: head.header("grpc-accept-encoding"), offering: responseCompression
        ) {
            return failure
        }
        takeMetadata(from: head)
        return nil
    }
}
