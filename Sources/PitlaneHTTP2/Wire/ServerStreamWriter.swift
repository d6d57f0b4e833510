import PitlaneCore

/// A stream as its response writer carries it on the handler's task: the stream's outbound
/// queue, which the writer uses from any thread, and the loop-owned connection with what it
/// needs to find the stream (an id on HTTP/1.1; on HTTP/2 the stream itself, so that a
/// response part costs no table lookup), which the writer hands back on the loop only.
package protocol ServerStreamHandle: Sendable {
    associatedtype Connection: ServerCallConnection where Connection.StreamHandle == Self
    var outbound: StreamOutbound { get }
    /// The connection's loop.
    var loop: EventLoop { get }
    /// The connection; on `loop` only.
    var connection: Connection { get }
}

/// A server connection as a handler's writer sees it, whichever HTTP version it speaks:
/// each call is made on the connection's loop, for the stream the writer was given.
package protocol ServerCallConnection: AnyObject {
    associatedtype StreamHandle: ServerStreamHandle
    func sendResponseHeaders(stream: StreamHandle, metadata: Metadata)
    /// A response message, already framed by the call's ``ResponseMessageEncoder``.
    func queueMessage(stream: StreamHandle, encoded: BodyBytes)
    func sendStatus(stream: StreamHandle, status: Status, trailers: Metadata)
    /// The handler ended without a status (it was cancelled): reset or close the stream.
    func abandon(stream: StreamHandle)
}

/// A handler's response writer: each part goes to the connection's loop, in order, and the
/// writer waits while the stream's queued bytes are above the window. Small enough (HTTP/2:
/// 18 bytes) to sit inline in its `RPCWriter.Closable`, with no box per RPC.
package struct ServerStreamWriter<Stream: ServerStreamHandle>: ClosableRPCWriterProtocol {
    package let stream: Stream
    /// Frames (and compresses) messages for the call's protocol.
    package let encoder: ResponseMessageEncoder

    private var outbound: StreamOutbound { stream.outbound }

    package func write(_ part: RPCResponsePart) async throws {
        let stream = self.stream
        switch part {
        case .metadata(let metadata):
            try await outbound.enqueue(0) {
                onLoop { stream.connection.sendResponseHeaders(stream: stream, metadata: metadata) }
            }
        case .message(let bytes, let flags):
            let (encoded, wireBytes) = try encoder.encode(bytes, flags: flags)
            try await outbound.enqueue(encoded.count, wireBytes: wireBytes) {
                onLoop { stream.connection.queueMessage(stream: stream, encoded: encoded) }
            }
        case .status(let status, let trailers):
            try await outbound.enqueue(0) {
                onLoop { stream.connection.sendStatus(stream: stream, status: status, trailers: trailers) }
            }
        }
    }

    /// A message, queued now if the stream is open and its queue at most at the watermark.
    package func tryWrite(_ part: RPCResponsePart) -> Bool {
        guard case .message(let bytes, let flags) = part,
            case (let encoded, let wireBytes)? = try? encoder.encode(bytes, flags: flags),
            outbound.tryEnqueue(encoded.count, wireBytes: wireBytes)
        else { return false }
        let stream = self.stream
        onLoop { stream.connection.queueMessage(stream: stream, encoded: encoded) }
        return true
    }

    package func finish(throwing error: (any Error)?) async {
        guard error != nil else { return }
        let stream = self.stream
        onLoop { stream.connection.abandon(stream: stream) }
    }

    package var writesWithoutTask: Bool { true }

    /// `body` runs as a task of the loop (``StreamOutbound/whenReady(on:_:)``).
    package func whenReady(_ body: @escaping @Sendable () -> Void) -> Bool {
        outbound.whenReady(on: stream.loop, body)
    }

    /// The status goes after the queued messages whatever their size (it adds no bytes); an
    /// ended stream takes nothing.
    package func finishWithoutWaiting(_ part: RPCResponsePart?) {
        let stream = self.stream
        guard case .status(let status, let trailers)? = part else {
            return onLoop { stream.connection.abandon(stream: stream) }
        }
        guard outbound.enqueueRegardless(0) else { return }
        onLoop { stream.connection.sendStatus(stream: stream, status: status, trailers: trailers) }
    }

    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        outbound.onLoop(stream.loop, body)
    }
}

/// The core's side of one accepted call, as either HTTP version's connection hands it over.
package struct AcceptedCall {
    package let rpc: ServerRPCStream
    package let context: ServerTransportContext
    /// The request parts, for the connection to fill as the body arrives.
    package let inbound: BufferedStream<RPCRequestPart>
}

extension ServerCall {
    /// Builds the core's streams for this call on the stream `handle`: the request's
    /// metadata (and a GET's message) already in, the writer framing for the protocol, the
    /// deadline from the head. `messageRead` runs on any thread as the handler takes
    /// `bytes` of request messages.
    package func accept(
        stream handle: some ServerStreamHandle, cancellation: RPCCancellationHandle,
        peer: String, now: ContinuousClock.Instant, maxMessageBytes: Int,
        messageRead: @escaping @Sendable (_ bytes: Int) -> Void
    ) -> AcceptedCall {
        let inbound = BufferedStream<RPCRequestPart>(
            highWatermark: .max,
            sizeOf: { part in if case .message(let bytes, _) = part { bytes.count + 5 } else { 0 } },
            onConsume: messageRead
        )
        inbound.yield(.metadata(metadata))
        let outbound = handle.outbound
        if let headMessage {
            do {
                inbound.yield(try requestPart((false, headMessage), limit: maxMessageBytes, counting: outbound))
            } catch {
                inbound.finish(throwing: error)
            }
        }
        let rpc = ServerRPCStream(
            descriptor: descriptor, inbound: RPCAsyncSequence(stream: inbound),
            outbound: RPCWriter.Closable(wrapping: ServerStreamWriter(stream: handle, encoder: encoder)),
            wireCounts: outbound
        )
        let context = ServerTransportContext(
            peer: peer, deadline: timeout.map { now + $0 }, cancellation: cancellation,
            codec: codec, requiresNoSideEffects: requiresNoSideEffects)
        return AcceptedCall(rpc: rpc, context: context, inbound: inbound)
    }
}
