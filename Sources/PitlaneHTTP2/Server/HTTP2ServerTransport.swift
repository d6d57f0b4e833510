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
    private struct State {
        var acceptor: LoopBound<Acceptor>?
        var loops: EventLoopGroup?
        /// Each touched on its own loop only (`LoopBound` checks it in debug builds).
        var connections: [ObjectIdentifier: LoopBound<any ServerConnection>] = [:]
        var shuttingDown = false
        var boundAddress: SocketAddress?
        /// Why `listen` failed, for callers of `listeningAddress` that come later.
        var listenFailure: (any Error)?
        var addressWaiters: [CheckedContinuation<SocketAddress, any Error>] = []
    }

    /// Where a server listens.
    public enum Address: Sendable, CustomStringConvertible {
        /// An IPv4 address (`0.0.0.0` for every interface) and a port; port 0 lets the system
        /// pick one, which ``HTTP2ServerTransport/listeningAddress`` then tells.
        case ipv4(host: String, port: Int)
        /// An IPv6 address (`::` for every interface, without brackets) and a port; port 0 as above.
        case ipv6(host: String, port: Int)
        /// A Unix domain socket created at `path` in the file system.
        case unixDomainSocket(path: String)

        func socketAddress() throws -> SocketAddress {
            switch self {
            case .ipv4(let host, let port): try .ipv4(host, port: port)
            case .ipv6(let host, let port): try .ipv6(host, port: port)
            case .unixDomainSocket(let path): try .unixDomainSocket(path: path)
            }
        }

        /// The address as `ipv4:host:port`, `ipv6:[host]:port` or `unix:path`.
        public var description: String {
            switch self {
            case .ipv4(let host, let port): "ipv4:\(host):\(port)"
            case .ipv6(let host, let port): "ipv6:[\(host)]:\(port)"
            case .unixDomainSocket(let path): "unix:\(path)"
            }
        }
    }

    /// The address the transport binds when `listen` is called.
    public let address: Address
    /// Whether connections are plaintext or TLS, and the TLS settings.
    public let security: Security
    /// Connection limits, timeouts and event-loop settings.
    public let config: Config
    private let state = Mutex(State())
    private let accepted = AcceptedWorkQueue()

    /// A transport for `address`. Certificate and key files are read in `listen`, which throws
    /// a `TLSError` when they are missing or invalid.
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

    /// Binds ``address`` and serves connections until ``beginGracefulShutdown()`` and the last RPC's handler returns.
    ///
    /// Throws a `TLSError` when the certificate or key cannot be loaded, or a `SocketAddressError` or `SocketError` when
    /// the address is invalid or cannot be bound;
    /// callers waiting on ``listeningAddress`` then get the same error.
    public func listen(
        streamHandler: @escaping @Sendable (ServerRPCStream, ServerTransportContext) async -> Void
    ) async throws {
        let loops = try EventLoopGroup(
            threads: config.eventLoops.threads, timeSource: config.timeSource, idlePollLimit: config.eventLoops.idlePollLimit
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
        let acceptorLoop = loops.next()
        let acceptor = LoopBound(
            Acceptor(listener: listener, loop: acceptorLoop, name: "\(address)") { [weak self] socket in
                self?.adopt(socket, on: loops.next(), tls: tls)
            }, loop: acceptorLoop)
        let waiters = state.withLock { state in
            state.acceptor = acceptor
            state.loops = loops
            state.boundAddress = bound
            defer { state.addressWaiters = [] }
            return state.addressWaiters
        }
        for waiter in waiters { waiter.resume(returning: bound) }

        try await acceptorLoop.submit { try acceptor.value.start() }

        // A task per RPC, tracked by `RunningTasks` rather than a task group (see there). The
        // loop that hands out RPCs runs on an event loop too, so an RPC accepted on that loop
        // starts there without a thread switch.
        let onLoops = config.eventLoops.runHandlers
        let tasks = RunningTasks()
        await withTaskCancellationHandler {
            await withTaskExecutorPreference(onLoops ? acceptorLoop : nil) {
                while let work = await accepted.next() {
                    switch work {
                    case .rpc(let loop, let stream, let context, let cancellation):
                        // Straight-line, and the stream captured as it is: whatever this task
                        // holds while the RPC waits stays allocated for the whole RPC (an idle
                        // stream is mostly this task's stack).
                        let id = tasks.starting()
                        let task = Task(executorPreference: onLoops ? loop : nil) {
                            cancellation.enter()
                            await streamHandler(stream, context)
                            cancellation.leave()
                            tasks.ended(id)
                        }
                        tasks.started(task, id: id)
                    case .task(let loop, let work):
                        let id = tasks.starting()
                        let task = Task(executorPreference: onLoops ? loop : nil) {
                            await work()
                            tasks.ended(id)
                        }
                        tasks.started(task, id: id)
                    }
                }
            }
            await tasks.waitForAll()
        } onCancel: {
            tasks.cancelAll()
        }
        loops.shutdownInBackground()
    }

    /// Stops accepting connections and asks open ones to drain; `listen` returns once the last connection closes
    /// and every RPC handler has returned.
    public func beginGracefulShutdown() {
        let (acceptor, connections) = state.withLock { state in
            state.shuttingDown = true
            return (state.acceptor, Array(state.connections.values))
        }
        acceptor?.execute { $0.close() }
        for connection in connections {
            connection.execute { $0.drain() }
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
            acceptor?.execute { $0.descriptorFreed() }
            self.finishIfDrained()
        }
        let accept: RPCAcceptor = { [accepted] stream, context, cancellation in
            accepted.offer(.rpc(loop: loop, stream: stream, context: context, cancellation: cancellation))
        }
        let config = self.config
        let http2 = { (engine: TLSEngine?) in
            HTTP2ServerConnection(socket: socket, loop: loop, config: config, peer: peer, tls: engine, accept: accept, onClose: onClose)
        }
        /// The connection that takes over from a sniffer or a handshaker, given what it read.
        let settled = { [weak self, accepted] (first: any ServerConnection, engine: TLSEngine?, http1: Bool, bytes: [UInt8]) in
            guard let self else { return }
            let next: any ServingConnection
            // Without a handler that serves HTTP/1.1, ALPN never settles on it.
            if http1, let handler = config.protocolHandler {
                next = handler.http1Connection(
                    AcceptedConnection(
                        socket: socket, loop: loop, peer: peer, tls: engine, config: config, accept: accept, onClose: onClose,
                        replace: { [weak self] old, new in self?.replace(old, with: new) },
                        run: { loop, work in accepted.offer(.task(loop: loop, work: work)) }
                    ))
            } else {
                next = http2(engine)
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
                config.connection.onTLSHandshakeFailure?(peer, error)
                return socket.close()
            }
            connection = TLSHandshaker(
                socket: socket, loop: loop, engine: engine, peer: peer, timeout: config.connection.prefaceTimeout,
                onFailure: config.connection.onTLSHandshakeFailure,
                decided: { handshaker, engine in settled(handshaker, engine, engine.speaksHTTP1, []) },
                onClose: { onClose($0) }
            )
        } else if config.protocolHandler?.servesHTTP1 != true {
            // Only HTTP/2 is spoken here: a client that sends anything else gets nghttp2's
            // GOAWAY (PROTOCOL_ERROR), then the connection closes.
            connection = http2(nil)
        } else {
            connection = ProtocolSniffer(
                socket: socket, loop: loop, timeout: config.connection.prefaceTimeout,
                decided: { sniffer, verdict, bytes in settled(sniffer, nil, verdict == .http1, bytes) },
                onClose: onClose
            )
        }
        let bound = LoopBound(connection, loop: loop)
        let admitted = state.withLock { state in
            guard !state.shuttingDown else { return false }
            state.connections[ObjectIdentifier(connection)] = bound
            return true
        }
        guard admitted else { return socket.close() }
        bound.execute { connection in
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
            state.connections[ObjectIdentifier(new)] = LoopBound(new, loop: new.loop)
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
