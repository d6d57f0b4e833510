import PitlaneCore
import Synchronization

/// gRPC over HTTP/2 for a `GRPCClient`: connects lazily to a target, plaintext or TLS,
/// reconnects with gRPC's connection backoff after failures, and opens one HTTP/2 stream per
/// RPC attempt.
///
/// ```swift
/// try await withGRPCClient(transport: .http2(target: .ipv4(host: "127.0.0.1", port: 8080))) { client in ... }
/// let tls = HTTP2ClientTransport.TLSConfig(trustRootsPath: "ca.pem")
/// try await withGRPCClient(transport: .http2(target: .dns(host: "example.com", port: 443), security: .tls(tls))) { client in ... }
/// ```
public final class HTTP2ClientTransport: ClientTransport {
    /// Where the server is.
    public enum Target: Sendable, CustomStringConvertible {
        case ipv4(host: String, port: Int)
        case ipv6(host: String, port: Int)
        /// Every address a name resolves to, tried in order (pick-first).
        case dns(host: String, port: Int)
        case unixDomainSocket(path: String)

        func resolve() async throws -> [SocketAddress] {
            switch self {
            case .ipv4(let host, let port): [try .ipv4(host, port: port)]
            case .ipv6(let host, let port): [try .ipv6(host, port: port)]
            case .dns(let host, let port): try await SocketAddress.resolve(host: host, port: port)
            case .unixDomainSocket(let path): [try .unixDomainSocket(path: path)]
            }
        }

        /// The name a TLS client expects in the server's certificate, unless overridden.
        var host: String {
            switch self {
            case .ipv4(let host, _), .ipv6(let host, _), .dns(let host, _): host
            case .unixDomainSocket: "localhost"
            }
        }

        /// The `:authority` of requests.
        var authority: String {
            switch self {
            case .ipv4(let host, let port), .dns(let host, let port): "\(host):\(port)"
            case .ipv6(let host, let port): "[\(host)]:\(port)"
            case .unixDomainSocket: "localhost"
            }
        }

        public var description: String {
            switch self {
            case .ipv4(let host, let port): "ipv4:\(host):\(port)"
            case .ipv6(let host, let port): "ipv6:[\(host)]:\(port)"
            case .dns(let host, let port): "dns:\(host):\(port)"
            case .unixDomainSocket(let path): "unix:\(path)"
            }
        }
    }

    /// Limits, timing and backoff; every value documented with its default.
    public struct Config: Sendable {
        /// The largest response message accepted, in bytes. Default 4 MiB.
        public var maxMessageBytes = 4 * 1024 * 1024
        /// Each stream's flow-control window, in bytes. Default 64 KiB.
        public var streamWindowBytes = 65_535
        /// Reconnection backoff (gRPC's connection-backoff): first delay 1 s, ×1.6, ±20 %, at most 120 s.
        public var backoff = Backoff()
        /// Event loop threads. Default 1.
        public var eventLoopThreads = 1
        /// How long a TCP (or Unix socket) connect may take before the attempt fails with
        /// `.unavailable` and backoff begins. Default 20 s, gRPC's minimum connect timeout.
        public var connectTimeout: Duration = .seconds(20)
        /// TLS: how long the handshake, and the server's first SETTINGS after it, may take
        /// before the connection attempt fails with `.unavailable`. Default 20 s.
        public var tlsHandshakeTimeout: Duration = .seconds(20)
        /// Client keepalive: PING after `time` and drop the connection when no ACK comes
        /// within `timeout`. Default nil: no pings, as in gRPC.
        public var keepalive: Keepalive?

        public struct Keepalive: Sendable {
            /// How long between pings. gRPC servers reject intervals under 5 minutes by default.
            public var time: Duration
            /// How long to wait for the ACK.
            public var timeout: Duration = .seconds(20)
            /// Ping while no RPC is open, too. Default false.
            public var permitWithoutCalls = false

            public init(time: Duration, timeout: Duration = .seconds(20), permitWithoutCalls: Bool = false) {
                self.time = time
                self.timeout = timeout
                self.permitWithoutCalls = permitWithoutCalls
            }
        }

        public struct Backoff: Sendable {
            public var initial: Duration = .seconds(1)
            public var multiplier = 1.6
            public var jitter = 0.2
            public var maximum: Duration = .seconds(120)
            public init() {}
        }

        public init() {}

        public static var defaults: Config { Config() }
    }

    /// The connection's state, as gRPC's connectivity semantics name them.
    private enum ConnectionState {
        case idle
        case connecting([CheckedContinuation<HTTP2ClientConnection, any Error>])
        case ready(HTTP2ClientConnection)
        case transientFailure(RPCError, retryAt: ContinuousClock.Instant)
        case shutdown
    }

    private struct State {
        var connection = ConnectionState.idle
        var backoff: Duration?
    }

    public let target: Target
    public let security: Security
    public let config: Config
    /// TLS: the context every connection's engine comes from, and the name they verify.
    private let tls: (context: TLSContext, serverName: TLSEngine.ServerName)?
    private let serviceConfig: ServiceConfig
    private let loops: EventLoopGroup
    private let state = Mutex(State())
    private let gate = StreamGate(name: "HTTP/2 client transport")

    /// A transport for `target`; nothing connects until the first RPC.
    ///
    /// - Throws: a ``TLSError`` when TLS files are missing or invalid.
    public init(
        target: Target, security: Security = .plaintext, config: Config = .defaults, serviceConfig: ServiceConfig = ServiceConfig()
    ) throws {
        self.target = target
        self.security = security
        self.config = config
        if case .tls(let tlsConfig) = security {
            tls = (try TLSContext.client(tlsConfig), TLSEngine.ServerName(tlsConfig.serverHostnameOverride ?? target.host))
        } else {
            tls = nil
        }
        self.serviceConfig = serviceConfig
        loops = try EventLoopGroup(threads: config.eventLoopThreads, name: "pitlane-client")
    }

    deinit {
        loops.shutdownInBackground()
    }

    public func config(forMethod descriptor: MethodDescriptor) -> MethodConfig? {
        serviceConfig.config(for: descriptor)
    }

    public func connect() async throws {
        await gate.waitUntilDrained()
        let connection: HTTP2ClientConnection? = state.withLock { state in
            defer { state.connection = .shutdown }
            if case .ready(let connection) = state.connection { return connection }
            return nil
        }
        if let connection { connection.loop.execute { connection.drain() } }
    }

    public func beginGracefulShutdown() {
        gate.beginShutdown()
    }

    public func withStream<T: Sendable>(
        descriptor: MethodDescriptor, options: CallOptions, _ body: (ClientRPCStream) async throws -> T
    ) async throws -> T {
        try gate.open()
        defer { gate.close() }
        let binding = ConnectionBinding(try await readyConnection(waitForReady: options.waitForReady ?? false))
        let stream = ClientStream(descriptor: descriptor, maxMessageBytes: config.maxMessageBytes, outboundHighWatermark: config.streamWindowBytes)
        stream.inbound = BufferedStream(
            highWatermark: .max,
            sizeOf: { part in if case .message(let bytes, _) = part { bytes.count + 5 } else { 0 } },
            onConsume: { [weak stream] bytes in
                guard bytes > 0, let stream else { return }
                binding.connection.messageReadFromAnyThread(stream: stream)
            }
        )
        let rpc = ClientRPCStream(
            descriptor: descriptor, inbound: RPCAsyncSequence(wrapping: stream.inbound),
            outbound: .init(wrapping: ClientStreamWriter(
                binding: binding, stream: stream, timeout: options.timeout,
                compression: options.compression.flatMap { $0 == .none ? nil : $0 },
                reconnect: { [self] in try await self.readyConnection(waitForReady: false) }
            ))
        )
        defer {
            stream.inbound.finishConsuming()
            let connection = binding.connection
            connection.loop.execute { connection.release(stream) }
        }
        return try await body(rpc)
    }

    // MARK: Connecting

    /// A ready connection: the current one, a new one, or — while backing off — a failure
    /// (`.unavailable`) unless the call waits for ready.
    private func readyConnection(waitForReady: Bool) async throws -> HTTP2ClientConnection {
        // A new connection that closed before its first stream (a server's idle limit on a
        // slow machine, say) is no failure of the RPC: it connects once more.
        var tryAgainAllowance = 2
        while true {
            enum Next {
                case use(HTTP2ClientConnection), connect, wait, retryAt(ContinuousClock.Instant), fail(RPCError)
                var isConnect: Bool { if case .connect = self { true } else { false } }
            }
            let next: Next = state.withLock { state in
                switch state.connection {
                case .ready(let connection) where connection.isUsable: return .use(connection)
                case .ready:
                    // It went away since; connect afresh.
                    state.connection = .connecting([])
                    return .connect
                case .idle:
                    state.connection = .connecting([])
                    return .connect
                case .connecting: return .wait
                case .transientFailure(let error, let retryAt):
                    if ContinuousClock.now >= retryAt {
                        state.connection = .connecting([])
                        return .connect
                    }
                    return waitForReady ? .retryAt(retryAt) : .fail(error)
                case .shutdown: return .fail(RPCError(code: .unavailable, message: "the transport has shut down"))
                }
            }
            switch next {
            case .use(let connection): return connection
            case .fail(let error): throw error
            case .retryAt(let instant): try await Task.sleep(until: instant, clock: .continuous)
            case .connect, .wait:
                do {
                    return try await (next.isConnect ? establish() : waitForConnection())
                } catch is TryAgain where tryAgainAllowance > 0 {
                    tryAgainAllowance -= 1
                } catch is TryAgain {
                    throw RPCError(code: .unavailable, message: "the new connection closed at once")
                }
            }
        }
    }

    /// The connection an RPC waited for closed before any stream used it (or the attempt it
    /// waited on is over): look at the state again.
    private struct TryAgain: Error {}

    /// Waits for the connection attempt in progress.
    private func waitForConnection() async throws -> HTTP2ClientConnection {
        try await withCheckedThrowingContinuation { continuation in
            let now: HTTP2ClientConnection?? = state.withLock { state in
                switch state.connection {
                case .connecting(var waiters):
                    waiters.append(continuation)
                    state.connection = .connecting(waiters)
                    return .none
                case .ready(let connection): return .some(connection)
                default: return .some(nil)
                }
            }
            switch now {
            case .none: break
            case .some(let connection?): continuation.resume(returning: connection)
            case .some(nil): continuation.resume(throwing: TryAgain())
            }
        }
    }

    /// Connects to the first address that accepts; records the outcome for waiters.
    private func establish() async throws -> HTTP2ClientConnection {
        var lastError = RPCError(code: .unavailable, message: "\(target) resolved to no address")
        do {
            for address in try await target.resolve() {
                do {
                    let connection = try await connect(to: address)
                    // It may have gone away (GOAWAY from an idle limit) before this task ran again.
                    let usable = connection.isUsable
                    let waiters = state.withLock { state in
                        defer {
                            state.connection = usable ? .ready(connection) : .idle
                            state.backoff = nil
                        }
                        if case .connecting(let waiters) = state.connection { return waiters }
                        return []
                    }
                    guard usable else {
                        for waiter in waiters { waiter.resume(throwing: TryAgain()) }
                        throw TryAgain()
                    }
                    for waiter in waiters { waiter.resume(returning: connection) }
                    return connection
                } catch let error as RPCError {
                    lastError = error
                }
            }
        } catch is CancellationError {
            // Only the RPC that was connecting was cancelled: the next one tries afresh,
            // without a backoff that the peer did not earn.
            let waiters = state.withLock { state in
                defer { state.connection = .idle }
                if case .connecting(let waiters) = state.connection { return waiters }
                return []
            }
            let error = RPCError(code: .unavailable, message: "the connection attempt was cancelled")
            for waiter in waiters { waiter.resume(throwing: error) }
            throw CancellationError()
        } catch {
            lastError = RPCError(code: .unavailable, message: "cannot resolve \(target): \(error)")
        }
        let waiters = state.withLock { state in
            let backoff = nextBackoff(after: state.backoff)
            state.backoff = backoff
            defer { state.connection = .transientFailure(lastError, retryAt: .now + jittered(backoff)) }
            if case .connecting(let waiters) = state.connection { return waiters }
            return []
        }
        for waiter in waiters { waiter.resume(throwing: lastError) }
        throw lastError
    }

    private func connect(to address: SocketAddress) async throws -> HTTP2ClientConnection {
        let loop = loops.next()
        let socket: Socket
        do {
            socket = try Socket(for: address)
        } catch {
            throw RPCError(code: .unavailable, message: "cannot create a socket for \(address): \(error)")
        }
        let engine: TLSEngine?
        do {
            engine = try tls.map { try $0.context.makeEngine(serverName: $0.serverName) }
        } catch {
            throw RPCError(code: .unavailable, message: "cannot set up TLS for \(address): \(error)")
        }
        let connection = HTTP2ClientConnection(
            socket: socket, loop: loop, authority: target.authority, config: config, tls: engine,
            onClose: { [weak self] connection in self?.forget(connection) }
        )
        let outcome = OneShot<Result<Void, RPCError>>()
        loop.execute {
            connection.start(to: address) { result in outcome.fulfil(result) }
        }
        try await outcome.value().get()
        return connection
    }

    /// A closed (or draining) connection is replaced on the next RPC.
    private func forget(_ connection: HTTP2ClientConnection) {
        state.withLock { state in
            if case .ready(let current) = state.connection, current === connection { state.connection = .idle }
        }
    }

    private func nextBackoff(after previous: Duration?) -> Duration {
        guard let previous else { return config.backoff.initial }
        return min(previous * config.backoff.multiplier, config.backoff.maximum)
    }

    private func jittered(_ duration: Duration) -> Duration {
        duration * Double.random(in: (1 - config.backoff.jitter)...(1 + config.backoff.jitter))
    }
}

extension ClientTransport where Self == HTTP2ClientTransport {
    /// gRPC over HTTP/2 to `target`, plaintext unless `security` says TLS.
    public static func http2(
        target: HTTP2ClientTransport.Target,
        security: HTTP2ClientTransport.Security = .plaintext,
        config: HTTP2ClientTransport.Config = .defaults
    ) throws -> Self {
        try HTTP2ClientTransport(target: target, security: security, config: config)
    }
}
