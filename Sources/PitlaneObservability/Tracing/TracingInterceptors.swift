import PitlaneCore

/// A server span per RPC (OpenTelemetry's RPC conventions: name `service/method`, kind
/// SERVER, `rpc.system`, `rpc.service`, `rpc.method`, `rpc.grpc.status_code`), continuing the
/// trace of the client's `traceparent` when it sent one, and recorded on `exporter`.
public struct TracingServerInterceptor: ServerInterceptor {
    private let exporter: OTLPSpanExporter

    public init(exporter: OTLPSpanExporter) {
        self.exporter = exporter
    }

    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        let parent = request.metadata[stringValues: "traceparent"].first.flatMap(TraceContext.init(traceparent:))
        let span = SpanInProgress(kind: .server, context: parent?.child() ?? .newTrace(), parent: parent,
                                  method: context.descriptor, peer: context.peer)
        let exporter = self.exporter
        return try await observing(request, context, next: next) { status in exporter.record(span.finished(status)) }
    }
}

/// A client span per RPC (kind CLIENT), whose context goes to the server in `traceparent`.
public struct TracingClientInterceptor: ClientInterceptor {
    private let exporter: OTLPSpanExporter

    public init(exporter: OTLPSpanExporter) {
        self.exporter = exporter
    }

    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output> {
        let span = SpanInProgress(kind: .client, context: .newTrace(), parent: nil, method: context.descriptor, peer: nil)
        var request = request
        request.metadata.replaceOrAddString(span.context.traceparent, forKey: "traceparent")
        let exporter = self.exporter
        do {
            let response = try await next(request, context)
            switch response.accepted {
            case .failure(let error):
                exporter.record(span.finished(error.status))
                return response
            case .success(let contents):
                // The call ends when its messages do: wrap them to end the span then.
                let messages = RPCAsyncSequence(wrapping: EndingSequence<Output>(base: contents.bodyParts) { status in
                    exporter.record(span.finished(status))
                })
                return StreamingClientResponse(accepted: .success(.init(metadata: contents.metadata, bodyParts: messages)))
            }
        } catch {
            exporter.record(span.finished(RPCError.from(error).status))
            throw error
        }
    }
}

/// A span between its start and its status.
struct SpanInProgress: Sendable {
    let kind: OTLPSpan.SpanKind
    let context: TraceContext
    let parent: TraceContext?
    let method: MethodDescriptor
    let peer: String?
    let start = OTLPSpanExporter.now()

    func finished(_ status: Status) -> OTLPSpan {
        .with { span in
            span.traceID = context.traceID
            span.spanID = context.spanID
            if let parent { span.parentSpanID = parent.spanID }
            span.flags = UInt32(context.flags) | 0x100  // bit 8: the parent's remoteness is known
            span.name = method.fullyQualifiedMethod
            span.kind = kind
            span.startTimeUnixNano = start
            span.endTimeUnixNano = OTLPSpanExporter.now()
            span.attributes = [
                OTLPSpanExporter.attribute("rpc.system", "grpc"),
                OTLPSpanExporter.attribute("rpc.service", method.service.fullyQualifiedService),
                OTLPSpanExporter.attribute("rpc.method", method.method),
                OTLPSpanExporter.attribute("rpc.grpc.status_code", status.code.rawValue),
            ]
            if let peer { span.attributes.append(OTLPSpanExporter.attribute("network.peer.address", peer)) }
            if Self.isError(status.code, kind: kind) {
                span.status = .with {
                    $0.code = .error
                    $0.message = status.message
                }
            }
        }
    }

    /// OpenTelemetry's gRPC conventions: a client span fails on any non-OK status; a server
    /// span only on the server's own failures (a NOT_FOUND is the client's doing).
    static func isError(_ code: Status.Code, kind: OTLPSpan.SpanKind) -> Bool {
        guard code != .ok else { return false }
        guard kind == .server else { return true }
        return [.unknown, .deadlineExceeded, .unimplemented, .internal, .unavailable, .dataLoss].contains(code)
    }
}
