import PitlaneCore
import Synchronization

/// One RPC attempt on a client connection. Loop-confined except `outbound` and `inbound`,
/// which are thread-safe bridges to the calling task.
///
/// `@unchecked Sendable`: mutable state is used on the connection's loop only.
final class ClientStream: @unchecked Sendable {
    let descriptor: MethodDescriptor
    var id: Int32?
    var headers: [(name: String, value: String)] = []
    var receivedResponseHeaders = false
    var deframer: MessageDeframer
    var inbound: BufferedStream<RPCResponsePart>!
    let outbound: StreamOutbound
    var pendingData = PendingData()
    var requestEnded = false
    var dataDeferred = false
    var window = InboundWindow()
    /// The response's `grpc-encoding`, nil for identity.
    var responseCompression: CompressionAlgorithm?
    let maxMessageBytes: Int
    private var finished = false

    init(descriptor: MethodDescriptor, maxMessageBytes: Int, outboundHighWatermark: Int) {
        self.descriptor = descriptor
        self.maxMessageBytes = maxMessageBytes
        deframer = MessageDeframer(maxMessageBytes: maxMessageBytes)
        outbound = StreamOutbound(highWatermark: outboundHighWatermark)
    }

    /// Response headers, or trailers: the first HEADERS frame carries metadata (or, ending the
    /// stream, the status alone); a later one carries the status.
    func receivedHeaders(endStream: Bool) {
        guard !finished else { return }
        if !receivedResponseHeaders {
            receivedResponseHeaders = true
            if let httpStatus = value(":status"), httpStatus != "200" {
                return finish(.status(Self.status(forHTTP: httpStatus), [:]))
            }
            if !endStream {
                guard value("content-type")?.hasPrefix("application/grpc") == true else {
                    return finish(.status(Status(code: .unknown, message: "the response is not gRPC (content-type \(value("content-type") ?? "none"))"), [:]))
                }
                if let encoding = value("grpc-encoding"), encoding != "identity" {
                    guard let algorithm = CompressionAlgorithm(name: encoding) else {
                        return finish(.status(Status(code: .internal, message: "the server used grpc-encoding \(encoding), which was not offered"), [:]))
                    }
                    responseCompression = algorithm
                }
                inbound.yield(.metadata(metadata()))
                return
            }
        }
        finish(.status(status(), metadata()))
    }

    /// Frames received DATA into messages; returns bytes of window to give back at once.
    func receivedData(_ data: UnsafeRawBufferPointer) -> Int {
        window.received(data.count)
        guard !finished else { return 0 }
        deframer.append(data)
        do {
            while let message = try deframer.next() {
                window.completed(messageOfSize: message.bytes.count + 5)
                var bytes = message.bytes
                if message.compressed {
                    guard let algorithm = responseCompression else {
                        throw RPCError(code: .internal, message: "a compressed message arrived without grpc-encoding")
                    }
                    bytes = try MessageCompression.decompress(bytes, with: algorithm, limit: maxMessageBytes)
                }
                inbound.yield(.message(bytes, message.compressed ? .compressed : []))
            }
        } catch {
            fail(RPCError.from(error))
        }
        return window.returnPartial(buffered: deframer.bufferedBytes)
    }

    /// END_STREAM without trailers.
    func receivedEnd() {
        guard !finished else { return }
        fail(RPCError(code: .internal, message: "the server ended the stream without a status"))
    }

    func fail(_ error: RPCError) {
        outbound.close(error)
        guard !finished else { return }
        finished = true
        inbound.finish(throwing: error)
    }

    private func finish(_ part: RPCResponsePart) {
        finished = true
        inbound.yield(part)
        inbound.finish()
        outbound.close(RPCError(code: .cancelled, message: "the RPC has ended"))
    }

    private func value(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    private func metadata() -> Metadata {
        var metadata = Metadata()
        for header in headers { metadata.addHeaderField(name: header.name, value: header.value) }
        return metadata
    }

    private func status() -> Status {
        guard let text = value("grpc-status"), let number = Int(text), let code = Status.Code(rawValue: number) else {
            return Status(code: .unknown, message: "the server sent no valid grpc-status")
        }
        return Status(code: code, message: value("grpc-message").map(PercentEncoding.decode) ?? "")
    }

    /// gRPC's mapping of HTTP statuses for responses that are not gRPC.
    static func status(forHTTP text: String) -> Status {
        let code: Status.Code = switch text {
        case "400": .internal
        case "401": .unauthenticated
        case "403": .permissionDenied
        case "404": .unimplemented
        case "429", "502", "503", "504": .unavailable
        default: .unknown
        }
        return Status(code: code, message: "HTTP status \(text)")
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

/// The calling task's request writer: each part goes to the connection's loop, in order.
struct ClientStreamWriter: ClosableRPCWriterProtocol {
    let binding: ConnectionBinding
    let stream: ClientStream
    let timeout: Duration?
    /// Request messages are compressed with this, when set.
    let compression: CompressionAlgorithm?
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
            let framed = try MessageFramer.frame(bytes, compression: flags.contains(.noCompression) ? nil : compression)
            try await stream.outbound.enqueue(framed.count) {
                connection.loop.execute { connection.queueData(stream, framed: framed) }
            }
        }
    }

    /// gRFC A6 transparent retry: a stream that never left may start on a new connection.
    private func start(with metadata: Metadata) async throws {
        let stream = self.stream
        var refused: HTTP2ClientConnection?
        for _ in 0..<2 {
            let connection = binding.connection
            let started = OneShot<Bool>()
            let (timeout, compression) = (self.timeout, self.compression)
            try await stream.outbound.enqueue(0) {
                connection.loop.execute {
                    started.fulfil(connection.startRequest(stream, metadata: metadata, timeout: timeout, compression: compression))
                }
            }
            if try await started.value() { return }
            refused = connection
            let next = try await reconnect()
            guard next !== refused else { break }
            binding.rebind(next)
        }
        throw RPCError(code: .unavailable, message: "connections kept going away before the stream could start")
    }

    func finish(throwing error: (any Error)?) async {
        let connection = binding.connection
        let stream = self.stream
        if error == nil {
            connection.loop.execute { connection.endRequest(stream) }
        } else {
            connection.loop.execute { connection.release(stream) }
        }
    }
}
