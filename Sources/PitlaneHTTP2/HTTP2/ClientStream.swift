import PitlaneCore
import Synchronization

/// One RPC attempt on a client connection. Loop-confined except `outbound` and `inbound`,
/// which are thread-safe bridges to the calling task.
///
/// `@unchecked Sendable`: mutable state is used on the connection's loop only.
final class ClientStream: @unchecked Sendable {
    let descriptor: MethodDescriptor
    /// Its state: idle, open as an HTTP/2 stream, finished; and the request's DATA.
    var machine = ClientStreamStateMachine()
    /// The id, in an object of its own for the reader's window updates to find the stream
    /// by: a reference back to the stream from its own inbound queue would be a cycle, and a
    /// weak one would give the stream a side table (every retain of it the slow path).
    let key = Key()
    var headers: [(name: String, value: String)] = []
    /// The RPC as the client's protocol (gRPC, gRPC-Web, Connect) frames it.
    var call: ClientCall
    /// Response parts for the calling task.
    let inbound: BufferedStream<RPCResponsePart>
    let outbound: StreamOutbound
    var window = InboundWindow()

    /// - Parameter binding: the connection the stream runs on, told (from any thread) as the
    ///   reader takes a response message, so that it gives the window back.
    init(descriptor: MethodDescriptor, call: ClientCall, outboundHighWatermark: Int, binding: ConnectionBinding) {
        self.descriptor = descriptor
        self.call = call
        outbound = StreamOutbound(highWatermark: outboundHighWatermark)
        inbound = BufferedStream(
            highWatermark: .max,
            sizeOf: { part in if case .message(let bytes, _) = part { bytes.count + 5 } else { 0 } },
            // One closure, made once per stream: the key and the binding are all it holds.
            onConsume: { [key] _ in binding.connection.messageReadFromAnyThread(stream: key) }
        )
    }

    /// Its HTTP/2 stream id, once the connection has opened it.
    var id: Int32? { machine.id }

    /// The request's headers were submitted as stream `id`.
    func opened(id: Int32) throws(ClientStreamStateMachine.Violation) {
        try machine.opened(id: id)
        key.id.store(id, ordering: .relaxed)
    }

    private var finished: Bool { !machine.deliversResponse || call.isEnded }

    /// Response headers or trailers, collected in `headers`.
    func receivedHeaders(endStream: Bool) {
        guard !finished else { return }
        let fields = headers
        headers = []
        call.receivedHeaders(fields, endStream: endStream, counting: outbound) { emit($0) }
    }

    /// Frames received DATA into messages; returns bytes of window to give back at once.
    func receivedData(_ data: UnsafeRawBufferPointer) -> Int {
        window.received(data.count)
        guard !finished else { return 0 }
        do {
            try call.receivedData(data, counting: outbound) { part in
                if case .message(let bytes, _) = part { window.completed(messageOfSize: bytes.count + 5) }
                emit(part)
            }
        } catch {
            fail(RPCError.from(error))
        }
        return window.returnPartial(buffered: call.bufferedBytes)
    }

    /// END_STREAM on a DATA frame.
    func receivedEnd() {
        guard !finished else { return }
        call.receivedEnd(counting: outbound) { emit($0) }
    }

    func fail(_ error: RPCError) {
        outbound.close(error)
        guard machine.failed() else { return }
        inbound.finish(throwing: error)
    }

    private func emit(_ part: RPCResponsePart) {
        inbound.yield(part)
        if case .status = part {
            machine.responseEnded()
            inbound.finish()
            outbound.close(RPCError(code: .cancelled, message: "the RPC has ended"))
        }
    }
}

/// The connection a client stream runs on. It can change once, before the stream has left:
/// when the first connection goes away as the stream starts, it moves to a fresh one.
final class ConnectionBinding: Sendable {
    private let current: Mutex<HTTP2ClientConnection>

    init(_ connection: HTTP2ClientConnection) {
        current = Mutex(connection)
    }

    var connection: HTTP2ClientConnection { current.withLock { $0 } }

    func rebind(_ connection: HTTP2ClientConnection) {
        current.withLock { $0 = connection }
    }
}

/// The calling task's request writer: each part goes to the connection's loop, in order. A
/// task already on that loop (the transport runs calls there) hands parts over directly, so
/// a request's headers, message and end leave in one write.
struct ClientStreamWriter: ClosableRPCWriterProtocol {
    let binding: ConnectionBinding
    let stream: ClientStream
    let timeout: Duration?
    /// Frames (and compresses) request messages for the call's protocol.
    let encoder: RequestMessageEncoder
    /// Finds another ready connection when the first went away before the stream started.
    let reconnect: @Sendable () async throws -> HTTP2ClientConnection

    func write(_ part: RPCRequestPart) async throws {
        let stream = self.stream
        switch part {
        case .metadata(let metadata):
            do {
                try await start(with: metadata)
            } catch {
                // The reader must learn of it: nothing else would end a stream that never started.
                let connection = binding.connection
                let failure = RPCError.from(error, unknownMessage: "the stream could not start: \(error)")
                connection.loop.execute { stream.fail(failure) }
                throw error
            }
        case .message(let bytes, let flags):
            let connection = binding.connection
            let (framed, wireBytes) = try encoder.encode(bytes, flags: flags)
            try await stream.outbound.enqueue(framed.count, wireBytes: wireBytes) {
                stream.outbound.onLoop(connection.loop) { connection.queueData(stream, framed: framed) }
            }
        }
    }

    /// gRFC A6 transparent retry: a stream that never left may start on a new connection.
    private func start(with metadata: Metadata) async throws {
        var refused: HTTP2ClientConnection?
        for _ in 0..<2 {
            let connection = binding.connection
            if try await start(on: connection, metadata) { return }
            refused = connection
            let next = try await reconnect()
            guard next !== refused else { break }
            binding.rebind(next)
        }
        throw RPCError(code: .unavailable, message: "connections kept going away before the stream could start")
    }

    /// Submits the request headers on `connection`; false when it takes no more streams.
    private func start(on connection: HTTP2ClientConnection, _ metadata: Metadata) async throws -> Bool {
        let stream = self.stream
        let timeout = self.timeout
        if connection.loop.inEventLoop {
            var started = false
            try await stream.outbound.enqueue(0) { started = connection.startRequest(stream, metadata: metadata, timeout: timeout) }
            return started
        }
        let started = OneShot<Bool>()
        try await stream.outbound.enqueue(0) {
            connection.loop.execute {
                started.fulfil(connection.startRequest(stream, metadata: metadata, timeout: timeout))
            }
        }
        return try await started.value()
    }

    func finish(throwing error: (any Error)?) async {
        let connection = binding.connection
        let stream = self.stream
        if error == nil {
            stream.outbound.onLoop(connection.loop) { connection.endRequest(stream) }
        } else {
            stream.outbound.onLoop(connection.loop) { connection.release(stream) }
        }
    }
}

extension ClientStream {
    /// A stream's id, for its reader's window updates to find it by; set on the connection's
    /// loop once the stream opens.
    final class Key: Sendable {
        /// 0 until the stream opens (client streams have odd ids).
        let id = Atomic<Int32>(0)
    }
}
