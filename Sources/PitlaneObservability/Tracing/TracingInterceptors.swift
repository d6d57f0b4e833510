import PitlaneCore

/// A server span per RPC (OpenTelemetry's RPC conventions: name `service/method`, kind
/// SERVER, `rpc.system`, `rpc.service`, `rpc.method`, `rpc.grpc.status_code`), continuing the
/// trace of the client's `traceparent` when it sent one, with its `tracestate` (when
/// well-formed: W3C Trace Context's limits, else dropped) as the span's `trace_state`, and
/// recorded on `exporter`.
///
/// While the handler runs, the span is ``TraceContext/current``: calls the handler makes
/// through a client with ``TracingClientInterceptor`` continue the trace and forward the
/// `tracestate`.
public struct TracingServerInterceptor: ServerInterceptor {
    private let exporter: OTLPSpanExporter

    public init(exporter: OTLPSpanExporter) {
        self.exporter = exporter
    }

    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        let tracestate = request.metadata[stringValues: "tracestate"]
        let parent = request.metadata[stringValues: "traceparent"].first.flatMap {
            TraceContext(traceparent: $0, tracestate: tracestate)
        }
        let spanContext = parent?.child() ?? .newTrace()
        let span = SpanInProgress(kind: .server, context: spanContext, parent: parent,
                                  method: context.descriptor, peer: context.peer)
        let exporter = self.exporter
        let response = try await TraceContext.currentSpan.withValue(spanContext) {
            try await observing(request, context, next: next) { status in exporter.record(span.finished(status)) }
        }
        guard case .success(let contents) = response.accepted else { return response }
        // The handler's messages are written after this returns: in the span's context too.
        return StreamingServerResponse(metadata: contents.metadata) { writer in
            try await TraceContext.currentSpan.withValue(spanContext) { try await contents.producer(writer) }
        }
    }
}

/// A client span per RPC (kind CLIENT), whose context goes to the server in `traceparent`.
/// A call made while a server span is ``TraceContext/current`` (in a handler of a server with
/// ``TracingServerInterceptor``) is its child, in its trace, and sends its `tracestate` on.
public struct TracingClientInterceptor: ClientInterceptor {
    private let exporter: OTLPSpanExporter

    public init(exporter: OTLPSpanExporter) {
        self.exporter = exporter
    }

    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output> {
        let parent = TraceContext.current
        let span = SpanInProgress(kind: .client, context: parent?.child() ?? .newTrace(), parent: parent,
                                  method: context.descriptor, peer: nil)
        var request = request
        request.metadata.replaceOrAddString(span.context.traceparent, forKey: "traceparent")
        if !span.context.traceState.isEmpty {
            request.metadata.replaceOrAddString(span.context.traceState, forKey: "tracestate")
        }
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
            span.traceState = context.traceState
            if let parent { span.parentSpanID = parent.spanID }
            // Bit 8: whether the parent is remote is known; bit 9: it is (a server span's parent
            // is the calling process's span; a client span's, a span of this process).
            span.flags = UInt32(context.flags) | 0x100 | (kind == .server && parent != nil ? 0x200 : 0)
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
