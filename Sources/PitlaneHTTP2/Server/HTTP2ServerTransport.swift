import Glibc
import PitlaneCore
import Synchronization

/// gRPC over HTTP/2 for a `GRPCServer`: listens on a TCP or Unix socket, plaintext or TLS,
/// spreads connections over event loops, and hands each RPC to the server as a stream.
///
/// ```swift
/// let server = GRPCServer(transport: .http2(address: .ipv4(host: "127.0.0.1", port: 8080)), services: [Service()])
/// let tls = HTTP2ServerTransport.TLSConfig(certificateChainPath: "server.pem", privateKeyPath: "server.key")
/// let secure = GRPCServer(transport: .http2(address: .ipv4(host: "0.0.0.0", port: 443), security: .tls(tls)), services: [Service()])
/// ```
public final class HTTP2ServerTransport: ListeningServerTransport {
    /// Limits and timing; every value documented with its default.
    public struct Config: Sendable {
        /// Streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). Default 100.
        public var maxConcurrentStreams = 100
        /// The largest header list accepted, in bytes. Default 16 KiB.
        public var maxHeaderListBytes = 16_384
        /// The largest request message accepted, in bytes; larger ones fail with
        /// `.resourceExhausted` before they are buffered. Default 4 MiB.
        public var maxMessageBytes = 4 * 1024 * 1024
        /// Each stream's flow-control window, in bytes: how much a peer may send before the
        /// handler reads, and how much response data queues before the handler waits. Default 64 KiB.
        public var streamWindowBytes = 65_535
        /// The connection's flow-control window, in bytes: how much all streams together may
        /// have unread. Larger than a stream's, so a stream whose reader stalls cannot stall
        /// the others on its connection. Default 4 MiB.
        public var connectionWindowBytes = 4 * 1024 * 1024
        /// How long a new connection has to send its first bytes; with TLS, to complete the
        /// handshake and send its first HTTP/2 bytes. Default 10 s.
        public var prefaceTimeout: Duration = .seconds(10)
        /// The shortest interval between client PINGs the server tolerates (gRPC's
        /// `GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS`). A client pinging more
        /// often than this, more than `maxPingStrikes` times, gets GOAWAY
        /// ENHANCE_YOUR_CALM "too_many_pings" and is disconnected. Default 5 min.
        public var minimumPingInterval: Duration = .seconds(300)
        /// Pings tolerated below `minimumPingInterval` before the server acts. Default 2.
        public var maxPingStrikes = 2
        /// Rapid-reset protection (CVE-2023-44487): a client may reset this many streams at
        /// once, and `streamResetsPerSecond` more each second; past that the connection gets
        /// GOAWAY and is closed. Defaults 1,000 and 33.
        public var maxStreamResetBurst = 1_000
        public var streamResetsPerSecond = 33
        /// Close connections that have had no open stream for this long (GOAWAY, then close).
        /// Default nil: idle connections stay open.
        public var maxConnectionIdle: Duration?
        /// Ask connections to go away after this long (GOAWAY; streams finish), and close them
        /// `maxConnectionAgeGrace` later whatever is open. Default nil: no age limit.
        public var maxConnectionAge: Duration?
        /// Default 30 s.
        public var maxConnectionAgeGrace: Duration = .seconds(30)
        /// Compress responses with this when the client accepts it (`grpc-accept-encoding`).
        /// Default nil: responses are not compressed. Compressed requests are always accepted.
        public var responseCompression: CompressionAlgorithm?
        /// What the port serves beside gRPC over HTTP/2, plugged in by another module
        /// (PitlaneWeb's `config.web`). Default nil: gRPC over HTTP/2 alone.
        package var protocolHandler: (any ServerProtocolHandler)?
        /// The time the preface, idle, age and ping-policy timers and RPC deadlines run on.
        /// Default real time; tests step a ``ManualClock``.
        public var timeSource = TimeSource.continuous
        /// Event loop threads; default one per core.
        public var eventLoopThreads = System.coreCount
        /// How long an event loop out of work may poll for the next request before it sleeps
        /// (default 200 µs; zero sleeps at once). The window adapts: it opens while requests
        /// come soon after the loop runs out of work (a caller with one call in flight), and
        /// closes while traffic is sparse, so an idle server uses no CPU. It spares each
        /// request the wake-up of a sleeping thread, which on a virtual machine is tens of
        /// microseconds; see `EventLoop.start(name:timeSource:idlePollLimit:)`.
        public var idlePollLimit = Duration.microseconds(200)
        /// Whether handlers run on their connection's event loop (default true): no thread hop
        /// per message. Set false if handlers block (long computations, blocking I/O), so they
        /// run on Swift's global executor and never stall the loop's other connections.
        public var runsHandlersOnEventLoops = true
        /// Told about each TLS connection whose handshake failed (the client's address and
        /// why: an untrusted or missing client certificate, no ALPN "h2", a plaintext client);
        /// the connection is closed and the server carries on. Default: a line on standard error.
        public var onTLSHandshakeFailure: (@Sendable (_ peer: String, _ error: TLSError) -> Void)? = { peer, error in
            logToStandardError("pitlane: TLS handshake with \(peer) failed: \(error)")
        }

        public init() {}

        public static var defaults: Config { Config() }

        var callLimits: ServerCallLimits {
            ServerCallLimits(maxMessageBytes: maxMessageBytes, responseCompression: responseCompression)
        }
    }

    private struct State {
        var acceptor: Acceptor?
        var loops: EventLoopGroup?
        var connections: [ObjectIdentifier: any ServerConnection] = [:]
        var shuttingDown = false
        var boundAddress: SocketAddress?
        /// Why `listen` failed, for callers of `listeningAddress` that come later.
        var listenFailure: (any Error)?
        var addressWaiters: [CheckedContinuation<SocketAddress, any Error>] = []
    }

    /// Where a server listens.
    public enum Address: Sendable, CustomStringConvertible {
        case ipv4(host: String, port: Int)
        case ipv6(host: String, port: Int)
        case unixDomainSocket(path: String)

        func socketAddress() throws -> SocketAddress {
            switch self {
            case .ipv4(let host, let port): try .ipv4(host, port: port)
            case .ipv6(let host, let port): try .ipv6(host, port: port)
            case .unixDomainSocket(let path): try .unixDomainSocket(path: path)
            }
        }

        public var description: String {
            switch self {
            case .ipv4(let host, let port): "ipv4:\(host):\(port)"
            case .ipv6(let host, let port): "ipv6:[\(host)]:\(port)"
            case .unixDomainSocket(let path): "unix:\(path)"
            }
        }
    }

    public let address: Address
    public let security: Security
    public let config: Config
    private let state = Mutex(State())
    private let accepted = AcceptedWorkQueue()

    /// A transport for `address`. Certificate and key files are read in `listen`, which throws
    /// a ``TLSError`` when they are missing or invalid.
    public init(address: Address, security: Security = .plaintext, config: Config = .defaults) {
        self.address = address
        self.security = security
        self.config = config
    }

    /// Connections open now (HTTP/2, HTTP/1.1, WebSocket, and those not yet told apart).
    public var openConnections: Int {
        state.withLock { $0.connections.count }
    }

    /// The bound address (with the port the system chose for port 0).
    public var listeningAddress: SocketAddress {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let known = state.withLock { state -> Result<SocketAddress, any Error>? in
                    if let bound = state.boundAddress { return .success(bound) }
                    if let failure = state.listenFailure { return .failure(failure) }
                    state.addressWaiters.append(continuation)
                    return nil
                }
                if let known { continuation.resume(with: known) }
            }
        }
    }

    public func listen(
        streamHandler: @escaping @Sendable (ServerRPCStream, ServerTransportContext) async -> Void
    ) async throws {
        let loops = try EventLoopGroup(
            threads: config.eventLoopThreads, timeSource: config.timeSource, idlePollLimit: config.idlePollLimit
        )
        let listener: Socket
        let bound: SocketAddress
        let tls: TLSContext?
        do {
            if case .tls(let tlsConfig) = security {
                tls = try TLSContext.server(tlsConfig, servesHTTP1: config.protocolHandler?.servesHTTP1 ?? false)
            } else {
                tls = nil
            }
            listener = try Socket.listen(on: address.socketAddress(), backlog: 256)
            bound = try listener.localAddress
        } catch {
            loops.shutdownInBackground()
            let waiters = state.withLock { state in
                defer { state.addressWaiters = [] }
                state.listenFailure = error
                return state.addressWaiters
            }
            for waiter in waiters { waiter.resume(throwing: error) }
            throw error
        }
        let acceptor = Acceptor(listener: listener, loop: loops.next(), name: "\(address)") { [weak self] socket in
            self?.adopt(socket, on: loops.next(), tls: tls)
        }
        let waiters = state.withLock { state in
            state.acceptor = acceptor
            state.loops = loops
            state.boundAddress = bound
            defer { state.addressWaiters = [] }
            return state.addressWaiters
        }
        for waiter in waiters { waiter.resume(returning: bound) }

        try await acceptor.loop.submit { try acceptor.start() }

        // Discarding: a finished RPC's task is freed at once rather than kept for `next()`.
        // The loop that hands out RPCs runs on an event loop too, so an RPC accepted on that
        // loop starts there without a thread switch.
        let onLoops = config.runsHandlersOnEventLoops
        await withTaskExecutorPreference(onLoops ? acceptor.loop : nil) {
            await withDiscardingTaskGroup { group in
                while let work = await accepted.next() {
                    switch work {
                    case .rpc(let loop, let stream, let context, let cancellation):
                        // Straight-line, and the stream captured as it is: whatever this task
                        // holds while the RPC waits stays allocated for the whole RPC (an idle
                        // stream is mostly this task's stack).
                        group.addTask(executorPreference: onLoops ? loop : nil) {
                            cancellation.enter()
                            await streamHandler(stream, context)
                            cancellation.leave()
                        }
                    case .task(let loop, let work):
                        group.addTask(executorPreference: onLoops ? loop : nil) { await work() }
                    }
                }
            }
        }
        loops.shutdownInBackground()
    }

    public func beginGracefulShutdown() {
        let (acceptor, connections) = state.withLock { state in
            state.shuttingDown = true
            return (state.acceptor, Array(state.connections.values))
        }
        if let acceptor { acceptor.loop.execute { acceptor.close() } }
        for connection in connections {
            connection.loop.execute { connection.drain() }
        }
        finishIfDrained()
    }

    /// Ends `listen` once shutting down and no connection remains.
    private func finishIfDrained() {
        let done = state.withLock { $0.shuttingDown && $0.connections.isEmpty }
        if done { accepted.finish() }
    }

    /// Takes an accepted socket: a TLS connection's handshake says by ALPN whether it speaks
    /// HTTP/2 or HTTP/1.1; plaintext ones are told apart by their first bytes when the
    /// protocol handler serves HTTP/1.1, and are HTTP/2 otherwise.
    private func adopt(_ socket: Socket, on loop: EventLoop, tls: TLSContext?) {
        let peer = (try? socket.peerAddress).map { "\($0)" } ?? "unknown"
        let onClose: @Sendable (any ServerConnection) -> Void = { [weak self] connection in
            guard let self else { return }
            let acceptor = self.state.withLock { state in
                _ = state.connections.removeValue(forKey: ObjectIdentifier(connection))
                return state.acceptor
            }
            // A descriptor is free: an acceptor paused for want of them tries again now.
            acceptor?.descriptorFreed()
            self.finishIfDrained()
        }
        let accept: RPCAcceptor = { [accepted] stream, context, cancellation in
            accepted.offer(.rpc(loop: loop, stream: stream, context: context, cancellation: cancellation))
        }
        let config = self.config
        /// The connection that takes over from a sniffer or a handshaker, given what it read.
        let settled = { [weak self, accepted] (first: any ServerConnection, engine: TLSEngine?, http1: Bool, bytes: [UInt8]) in
            guard let self else { return }
            let next: any ServingConnection
            // Without a handler that serves HTTP/1.1, ALPN never settles on it.
            if http1, let handler = config.protocolHandler {
                next = handler.http1Connection(AcceptedConnection(
                    socket: socket, loop: loop, peer: peer, tls: engine, config: config, accept: accept, onClose: onClose,
                    replace: { [weak self] old, new in self?.replace(old, with: new) },
                    run: { loop, work in accepted.offer(.task(loop: loop, work: work)) }
                ))
            } else {
                next = HTTP2ServerConnection(socket: socket, loop: loop, config: config, peer: peer, tls: engine,
                                             accept: accept, onClose: onClose)
            }
            self.replace(first, with: next)
            do {
                try next.start(receivedAlready: bytes)
                // Plaintext may wait inside the TLS engine already: read it now, the loop will not say.
                if engine != nil { next.readable() }
            } catch {
                next.close()
            }
        }
        let connection: any ServerConnection
        if let tls {
            let engine: TLSEngine
            do {
                engine = try tls.makeEngine()
            } catch {
                config.onTLSHandshakeFailure?(peer, error)
                return socket.close()
            }
            connection = TLSHandshaker(
                socket: socket, loop: loop, engine: engine, peer: peer, timeout: config.prefaceTimeout,
                onFailure: config.onTLSHandshakeFailure,
                decided: { handshaker, engine in settled(handshaker, engine, engine.speaksHTTP1, []) },
                onClose: { onClose($0) }
            )
        } else if config.protocolHandler?.servesHTTP1 != true {
            // Only HTTP/2 is spoken here: a client that sends anything else gets nghttp2's
            // GOAWAY (PROTOCOL_ERROR), then the connection closes.
            connection = HTTP2ServerConnection(socket: socket, loop: loop, config: config, peer: peer, tls: nil,
                                               accept: accept, onClose: onClose)
        } else {
            connection = ProtocolSniffer(
                socket: socket, loop: loop, timeout: config.prefaceTimeout,
                decided: { sniffer, verdict, bytes in settled(sniffer, nil, verdict == .http1, bytes) },
                onClose: onClose
            )
        }
        let admitted = state.withLock { state in
            guard !state.shuttingDown else { return false }
            state.connections[ObjectIdentifier(connection)] = connection
            return true
        }
        guard admitted else { return socket.close() }
        loop.execute {
            do {
                try connection.start()
            } catch {
                connection.close()
            }
        }
    }

    /// Puts `new` in `old`'s place among the open connections.
    private func replace(_ old: any ServerConnection, with new: any ServerConnection) {
        state.withLock { state in
            state.connections.removeValue(forKey: ObjectIdentifier(old))
            state.connections[ObjectIdentifier(new)] = new
        }
    }
}

extension ServerTransport where Self == HTTP2ServerTransport {
    /// gRPC over HTTP/2 on `address`, plaintext unless `security` says TLS.
    public static func http2(
        address: HTTP2ServerTransport.Address,
        security: HTTP2ServerTransport.Security = .plaintext,
        config: HTTP2ServerTransport.Config = .defaults
    ) -> Self {
        HTTP2ServerTransport(address: address, security: security, config: config)
    }
}
