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
///
/// Calls the server answers without a handler (a method it does not serve) get a span too,
/// named after the method the client asked for, with status UNIMPLEMENTED.
public struct TracingServerInterceptor: ServerInterceptor {
    private let exporter: OTLPSpanExporter
    private let messageEvents: Bool

    /// - Parameters:
    ///   - exporter: where finished spans go.
    ///   - messageEvents: also give each span a "message" event per request message read and
    ///     response message written (OpenTelemetry's RPC conventions: `message.type` SENT or
    ///     RECEIVED, `message.id` from 1 each way, `message.uncompressed_size`), the first 128
    ///     of them, the rest counted in the span's `dropped_events_count`. Default false: an
    ///     event costs a lock and a record per message.
    public init(exporter: OTLPSpanExporter, messageEvents: Bool = false) {
        self.exporter = exporter
        self.messageEvents = messageEvents
    }

    /// True: a call to a method the server does not serve gets its span (UNIMPLEMENTED).
    public var seesUnservedCalls: Bool { true }

    /// Runs the call inside a server span, continuing the client's trace when `traceparent` is well-formed, and records the
    /// span on the exporter once the handler finishes.
    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        let tracestate = request.metadata[stringValues: "tracestate"]
        let parent = request.metadata[stringValues: "traceparent"].first.flatMap {
            TraceContext(traceparent: $0, tracestate: tracestate)
        }
        let spanContext = parent?.child() ?? .newTrace()
        let events = messageEvents ? MessageEvents() : nil
        let span = SpanInProgress(
            kind: .server, context: spanContext, parent: parent,
            method: context.descriptor, peer: context.peer, events: events)
        // With events on, each request message is recorded as the handler reads it.
        let observed =
            events.map { events in
                StreamingServerRequest(
                    metadata: request.metadata,
                    messages: RPCAsyncSequence(wrapping: RecordingSequence(base: request.messages) { events.received($0) }))
            } ?? request
        let exporter = self.exporter
        let response = try await TraceContext.currentSpan.withValue(spanContext) {
            try await observing(observed, context, next: next) { status in exporter.record(span.finished(status)) }
        }
        guard case .success(let contents) = response.accepted else { return response }
        // The handler's messages are written after this returns: in the span's context too.
        return StreamingServerResponse(metadata: contents.metadata) { output in
            let writer =
                events.map { events in
                    RPCWriter(wrapping: RecordingWriter(base: output) { events.sent($0) })
                } ?? output
            return try await TraceContext.currentSpan.withValue(spanContext) { try await contents.producer(writer) }
        }
    }
}

/// A client span per RPC (kind CLIENT), whose context goes to the server in `traceparent`.
/// A call made while a server span is ``TraceContext/current`` (in a handler of a server with
/// ``TracingServerInterceptor``) is its child, in its trace, and sends its `tracestate` on.
public struct TracingClientInterceptor: ClientInterceptor {
    private let exporter: OTLPSpanExporter
    private let messageEvents: Bool

    /// - Parameters:
    ///   - exporter: where finished spans go.
    ///   - messageEvents: also give each span a "message" event per request message written
    ///     and response message read, as ``TracingServerInterceptor`` does. Default false.
    public init(exporter: OTLPSpanExporter, messageEvents: Bool = false) {
        self.exporter = exporter
        self.messageEvents = messageEvents
    }

    /// Starts a client span, sends its context in `traceparent` (and `tracestate`), and records the span when the response
    /// ends or the call fails.
    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output> {
        let parent = TraceContext.current
        let events = messageEvents ? MessageEvents() : nil
        let span = SpanInProgress(
            kind: .client, context: parent?.child() ?? .newTrace(), parent: parent,
            method: context.descriptor, peer: nil, events: events)
        var request = request
        request.metadata.replaceOrAddString(span.context.traceparent, forKey: "traceparent")
        if !span.context.traceState.isEmpty {
            request.metadata.replaceOrAddString(span.context.traceState, forKey: "tracestate")
        }
        if let events {
            let producer = request.producer
            request.producer = { writer in
                try await producer(RPCWriter(wrapping: RecordingWriter(base: writer) { events.sent($0) }))
            }
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
                let ending = EndingSequence<Output>(base: contents.bodyParts, events: events) { status in
                    exporter.record(span.finished(status))
                }
                let messages = RPCAsyncSequence(wrapping: ending)
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
    /// Its "message" events, when its interceptor records them.
    let events: MessageEvents?
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
            events?.write(into: &span)
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
