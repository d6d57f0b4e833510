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
    public let server: Server
    public let client: Client

    /// - Parameters:
    ///   - bufferBytes: how many bytes each direction of a stream buffers before the writer
    ///     waits for the reader (the equivalent of an HTTP/2 stream window). Default 64 KiB.
    ///   - serviceConfig: method configs the client applies.
    public init(bufferBytes: Int = 65_536, serviceConfig: ServiceConfig = ServiceConfig()) {
        let server = Server()
        self.server = server
        client = Client(server: server, bufferBytes: bufferBytes, serviceConfig: serviceConfig)
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

        public func listen(
            streamHandler: @escaping @Sendable (ServerRPCStream, ServerTransportContext) async -> Void
        ) async throws {
            await withTaskGroup(of: Void.self) { group in
                for await stream in accepted {
                    group.addTask {
                        await stream.cancellation.run { await streamHandler(stream.stream, stream.context) }
                    }
                }
            }
        }

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
        private struct State {
            var shuttingDown = false
            var openStreams = 0
            var peakBufferedBytes = 0
            var connectWaiters: [CheckedContinuation<Void, Never>] = []
        }

        private let server: Server
        private let bufferBytes: Int
        private let serviceConfig: ServiceConfig
        private let state = Mutex(State())

        init(server: Server, bufferBytes: Int, serviceConfig: ServiceConfig) {
            self.server = server
            self.bufferBytes = bufferBytes
            self.serviceConfig = serviceConfig
        }

        public func connect() async throws {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state in
                    if state.shuttingDown && state.openStreams == 0 { return true }
                    state.connectWaiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }

        public func beginGracefulShutdown() {
            let waiters = state.withLock { state in
                state.shuttingDown = true
                guard state.openStreams == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { state.connectWaiters = [] }
                return state.connectWaiters
            }
            for waiter in waiters { waiter.resume() }
        }

        /// The most bytes any closed stream ever buffered in one direction: flow control at work.
        public var peakBufferedBytes: Int { state.withLock { $0.peakBufferedBytes } }

        public func config(forMethod descriptor: MethodDescriptor) -> MethodConfig? {
            serviceConfig.config(for: descriptor)
        }

        public func withStream<T: Sendable>(
            descriptor: MethodDescriptor, options: CallOptions, _ body: (ClientRPCStream) async throws -> T
        ) async throws -> T {
            let opened = state.withLock { state in
                guard !state.shuttingDown else { return false }
                state.openStreams += 1
                return true
            }
            guard opened else { throw RPCError(code: .unavailable, message: "the in-process transport is shutting down") }
            defer { closeStream() }

            let requests = BufferedStream<RPCRequestPart>(highWatermark: bufferBytes, sizeOf: \.byteCount)
            let responses = BufferedStream<RPCResponsePart>(highWatermark: bufferBytes, sizeOf: \.byteCount)
            let cancellation = RPCCancellationHandle()
            let context = ServerTransportContext(
                peer: "in-process", deadline: options.timeout.map { ContinuousClock.now + $0 }
            )
            let serverStream = ServerRPCStream(
                descriptor: descriptor, inbound: RPCAsyncSequence(wrapping: requests),
                outbound: .init(wrapping: BufferedStreamWriter(stream: responses))
            )
            guard server.accept(AcceptedStream(stream: serverStream, context: context, cancellation: cancellation)) else {
                throw RPCError(code: .unavailable, message: "the in-process server is not accepting RPCs")
            }
            let clientStream = ClientRPCStream(
                descriptor: descriptor, inbound: RPCAsyncSequence(wrapping: responses),
                outbound: .init(wrapping: BufferedStreamWriter(stream: requests))
            )
            // Whatever way the client leaves, the server must not wait on it: like RST_STREAM.
            defer {
                let peak = max(requests.peakBufferedBytes, responses.peakBufferedBytes)
                state.withLock { $0.peakBufferedBytes = max($0.peakBufferedBytes, peak) }
                responses.finishConsuming()
                requests.finish(throwing: RPCError(code: .cancelled, message: "the client closed the stream"))
                cancellation.cancel()
            }
            return try await body(clientStream)
        }

        private func closeStream() {
            let waiters = state.withLock { state in
                state.openStreams -= 1
                guard state.shuttingDown && state.openStreams == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { state.connectWaiters = [] }
                return state.connectWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }
}
