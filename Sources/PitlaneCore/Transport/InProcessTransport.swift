import Synchronization

/// A client and a server transport joined in memory: the whole gRPC stack without sockets,
/// with the same semantics as a network transport, flow control included.
///
/// ```swift
/// let transport = InProcessTransport()
/// let server = GRPCServer(transport: transport.server, services: [Service()])
/// let client = GRPCClient(transport: transport.client)
/// ```
public struct InProcessTransport: Sendable {
    /// The server half, to give to a `GRPCServer`.
    public let server: Server
    /// The client half, to give to a `GRPCClient`.
    public let client: Client

    /// Creates a client and a server half joined to each other.
    ///
    /// - Parameters:
    ///   - bufferBytes: how many bytes each direction of a stream buffers before the writer
    ///     waits for the reader (the equivalent of an HTTP/2 stream window). Default 64 KiB.
    ///   - serviceConfig: method configs the client applies.
    ///   - timeSource: the time deadlines, retry backoff and hedging delays run on. Default real time.
    public init(
        bufferBytes: Int = 65_536, serviceConfig: ServiceConfig = ServiceConfig(),
        timeSource: TimeSource = .continuous
    ) {
        let server = Server()
        self.server = server
        client = Client(server: server, bufferBytes: bufferBytes, serviceConfig: serviceConfig, timeSource: timeSource)
    }

    struct AcceptedStream: Sendable {
        let stream: ServerRPCStream
        let context: ServerTransportContext
        let cancellation: RPCCancellationHandle
    }

    /// The server half: accepts what the client half opens.
    public final class Server: ServerTransport {
        private let accepted: AsyncStream<AcceptedStream>
        private let acceptor: AsyncStream<AcceptedStream>.Continuation
        private let isShutDown = Mutex(false)

        init() {
            (accepted, acceptor) = AsyncStream.makeStream()
        }

        /// Runs `streamHandler` for each stream the client half opens, concurrently, until shutdown begins and the last handler returns.
        public func listen(
            streamHandler: @escaping @Sendable (ServerRPCStream, ServerTransportContext) async -> Void
        ) async throws {
            // Discarding: a finished RPC's task is freed at once rather than kept for `next()`.
            await withDiscardingTaskGroup { group in
                for await stream in accepted {
                    group.addTask {
                        await stream.cancellation.run { await streamHandler(stream.stream, stream.context) }
                    }
                }
            }
        }

        /// Stops accepting streams, so new client calls fail with `.unavailable`; handlers already running finish.
        public func beginGracefulShutdown() {
            isShutDown.withLock { $0 = true }
            acceptor.finish()
        }

        /// Hands a stream to `listen`; false once the server is shutting down.
        func accept(_ stream: AcceptedStream) -> Bool {
            isShutDown.withLock { shutDown in
                guard !shutDown else { return false }
                acceptor.yield(stream)
                return true
            }
        }
    }

    /// The client half: each stream is a pair of bounded buffers to the server half.
    public final class Client: ClientTransport {
        private let server: Server
        private let bufferBytes: Int
        private let serviceConfig: ServiceConfig
        private let gate = StreamGate(name: "in-process transport")
        private let peak = Mutex(0)
        /// The time deadlines, retry backoff and hedging delays run on.
        public let timeSource: TimeSource

        init(server: Server, bufferBytes: Int, serviceConfig: ServiceConfig, timeSource: TimeSource) {
            self.server = server
            self.bufferBytes = bufferBytes
            self.serviceConfig = serviceConfig
            self.timeSource = timeSource
        }

        /// Returns once `beginGracefulShutdown()` has been called and the last stream has closed; there are no connections to keep.
        public func connect() async throws {
            await gate.waitUntilDrained()
        }

        /// Stops opening streams (new ones fail with `.unavailable`); open ones run to their end, then `connect()` returns.
        public func beginGracefulShutdown() {
            gate.beginShutdown()
        }

        /// The most bytes any closed stream ever buffered in one direction: flow control at work.
        public var peakBufferedBytes: Int { peak.withLock { $0 } }

        /// The service config's entry for `descriptor`, if it has one.
        public func config(forMethod descriptor: MethodDescriptor) -> MethodConfig? {
            serviceConfig.config(for: descriptor)
        }

        /// Opens a stream to the server half and runs `body` with it; when `body` returns or throws, the server sees the
        /// stream cancelled if its handler is still running. Throws `.unavailable` when either half is shutting down.
        public nonisolated(nonsending) func withStream<T: Sendable>(
            descriptor: MethodDescriptor, options: CallOptions, _ body: (ClientRPCStream) async throws -> T
        ) async throws -> T {
            try gate.open()
            defer { gate.close() }

            let requests = BufferedStream<RPCRequestPart>(highWatermark: bufferBytes, sizeOf: \.byteCount)
            let responses = BufferedStream<RPCResponsePart>(highWatermark: bufferBytes, sizeOf: \.byteCount)
            let cancellation = RPCCancellationHandle()
            let deadline = options.timeout.map { timeSource.now + $0 }
            let context = ServerTransportContext(peer: "in-process", deadline: deadline, cancellation: cancellation)
            let deadlineTimer = deadline.map { timeSource.schedule(at: $0) { cancellation.expireDeadline() } }
            let serverStream = ServerRPCStream(
                descriptor: descriptor, inbound: RPCAsyncSequence(stream: requests),
                outbound: .init(wrapping: BufferedStreamWriter(stream: responses))
            )
            guard server.accept(AcceptedStream(stream: serverStream, context: context, cancellation: cancellation)) else {
                throw RPCError(code: .unavailable, message: "the in-process server is not accepting RPCs")
            }
            let clientStream = ClientRPCStream(
                descriptor: descriptor, inbound: RPCAsyncSequence(stream: responses),
                outbound: .init(wrapping: BufferedStreamWriter(stream: requests))
            )
            // Whatever way the client leaves, the server must not wait on it: like RST_STREAM.
            defer {
                let streamPeak = max(requests.peakBufferedBytes, responses.peakBufferedBytes)
                peak.withLock { $0 = max($0, streamPeak) }
                responses.finishConsuming()
                requests.finish(throwing: RPCError(code: .cancelled, message: "the client closed the stream"))
                cancellation.cancel()
                deadlineTimer?.cancel()
            }
            return try await body(clientStream)
        }
    }
}
