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
        /// An IPv4 address in dotted form, such as `127.0.0.1`, and a port.
        case ipv4(host: String, port: Int)
        /// An IPv6 address, such as `::1` (without brackets), and a port.
        case ipv6(host: String, port: Int)
        /// Every address a name resolves to: tried in order (pick-first), or each in turn
        /// (round-robin, `Config.loadBalancing`).
        case dns(host: String, port: Int)
        /// A Unix domain socket at `path` in the file system.
        case unixDomainSocket(path: String)
        /// A fixed list of servers, as gRPC's `ipv4:host:port,host:port` targets name them.
        case addresses([SocketAddress])

        func resolve() async throws -> [SocketAddress] {
            switch self {
            case .ipv4(let host, let port): [try .ipv4(host, port: port)]
            case .ipv6(let host, let port): [try .ipv6(host, port: port)]
            case .dns(let host, let port): try await SocketAddress.resolve(host: host, port: port)
            case .unixDomainSocket(let path): [try .unixDomainSocket(path: path)]
            case .addresses(let addresses): addresses
            }
        }

        /// The name a TLS client expects in the server's certificate, unless overridden.
        var host: String {
            switch self {
            case .ipv4(let host, _), .ipv6(let host, _), .dns(let host, _): host
            case .unixDomainSocket: "localhost"
            case .addresses(let addresses): addresses.first?.ipAddress ?? "localhost"
            }
        }

        /// The `:authority` of requests.
        var authority: String {
            switch self {
            case .ipv4(let host, let port), .dns(let host, let port): "\(host):\(port)"
            case .ipv6(let host, let port): "[\(host)]:\(port)"
            case .unixDomainSocket: "localhost"
            case .addresses(let addresses): addresses.first?.plainDescription ?? "localhost"
            }
        }

        /// The target in gRPC's name syntax (`ipv4:host:port`, `dns:host:port`, `unix:path`), or a comma-separated address list.
        public var description: String {
            switch self {
            case .ipv4(let host, let port): "ipv4:\(host):\(port)"
            case .ipv6(let host, let port): "ipv6:[\(host)]:\(port)"
            case .dns(let host, let port): "dns:\(host):\(port)"
            case .unixDomainSocket(let path): "unix:\(path)"
            case .addresses(let addresses): addresses.map(\.description).joined(separator: ",")
            }
        }
    }

    /// Limits, timing and backoff; every value documented with its default.
    public struct Config: Sendable {
        /// The protocol calls speak: gRPC (default); with PitlaneWeb, gRPC-Web (a service
        /// behind Envoy's filter, say) or Connect (a connect-go service). Pitlane servers with
        /// `config.web` speak all three.
        public var wireProtocol = ClientWireProtocol.grpc
        /// How messages are written: binary (default), or Protocol Buffers' JSON mapping
        /// (Connect's `json` codec; the generated clients serialize to match).
        public var codec = MessageCodec.protobuf
        /// The largest response message accepted, in bytes. Default 4 MiB.
        public var maxMessageBytes = 4 * 1024 * 1024
        /// Each stream's flow-control window, in bytes. Default 64 KiB.
        public var streamWindowBytes = 65_535
        /// The connection's flow-control window, in bytes: how much all streams together may
        /// have unread. Larger than a stream's, so a stream whose reader stalls cannot stall
        /// the others on its connection. Default 4 MiB.
        public var connectionWindowBytes = 4 * 1024 * 1024
        /// Reconnection backoff (gRPC's connection-backoff): first delay 1 s, ×1.6, ±20 %, at most 120 s.
        public var backoff = Backoff()
        /// How RPCs spread over the target's addresses. Default `.pickFirst`.
        public var loadBalancing = LoadBalancing.pickFirst
        /// Event loop threads. Default 1.
        public var eventLoopThreads = 1
        /// With one event loop thread: run each RPC's tasks (request producer, response
        /// handler) on it, so that messages reach them and leave them without a thread hop,
        /// as the server runs its handlers. Set false when they block (synchronous file or
        /// database work, say), which would stall every RPC's I/O. Default true.
        public var runsCallsOnEventLoop = true
        /// How long a TCP (or Unix socket) connect may take before the attempt fails with
        /// `.unavailable` and backoff begins. Default 20 s, gRPC's minimum connect timeout.
        public var connectTimeout: Duration = .seconds(20)
        /// TLS: how long the handshake, and the server's first SETTINGS after it, may take
        /// before the connection attempt fails with `.unavailable`. Default 20 s.
        public var tlsHandshakeTimeout: Duration = .seconds(20)
        /// Client keepalive: PING after `time` and drop the connection when no ACK comes
        /// within `timeout`. Default nil: no pings, as in gRPC.
        public var keepalive: Keepalive?
        /// The time connect and handshake timeouts, keepalive, backoff, deadlines, retry
        /// backoff and hedging delays run on. Default real time; tests step a `ManualClock`.
        public var timeSource = TimeSource.continuous

        /// How often the client pings its connection to learn that the server is still there, and how long it waits for the ACK.
        public struct Keepalive: Sendable {
            /// How long between pings. gRPC servers reject intervals under 5 minutes by default.
            public var time: Duration
            /// How long to wait for the ACK.
            public var timeout: Duration = .seconds(20)
            /// Ping while no RPC is open, too. Default false.
            public var permitWithoutCalls = false

            /// Keepalive that pings every `time` and drops the connection when no ACK comes within `timeout` (default 20 s).
            public init(time: Duration, timeout: Duration = .seconds(20), permitWithoutCalls: Bool = false) {
                self.time = time
                self.timeout = timeout
                self.permitWithoutCalls = permitWithoutCalls
            }
        }

        /// How long to wait before reconnecting after a failed attempt; each delay is the previous one times
        /// `multiplier`, capped at `maximum`, then randomized by `jitter`.
        public struct Backoff: Sendable {
            /// The delay after the first failure. Default 1 s.
            public var initial: Duration = .seconds(1)
            /// The factor each later delay grows by. Default 1.6.
            public var multiplier = 1.6
            /// The fraction each delay is randomly stretched or shrunk by: 0.2 means ±20 %. Default 0.2.
            public var jitter = 0.2
            /// The longest delay, before jitter. Default 120 s.
            public var maximum: Duration = .seconds(120)
            /// gRPC's standard connection backoff: 1 s, ×1.6, ±20 %, at most 120 s.
            public init() {}
        }

        /// A configuration with every value at its default.
        public init() {}

        /// A configuration with every value at its default, for `config: .defaults`.
        public static var defaults: Config { Config() }

        /// gRPC's two standard policies.
        public enum LoadBalancing: Sendable {
            /// One connection, to the first address that accepts it.
            case pickFirst
            /// A connection to every address; RPCs take them in turn, skipping those backing off.
            case roundRobin
        }
    }

    /// The server or servers this transport connects to.
    public let target: Target
    /// Whether connections are plaintext or TLS, and the TLS settings.
    public let security: Security
    /// Limits, timing and backoff the transport was created with.
    public let config: Config
    private let serviceConfig: ServiceConfig
    private let settings: ConnectionSettings
    /// Nil until the first RPC resolves the target (round-robin) or needs the one subchannel.
    private let subchannels = Mutex<[Subchannel]?>(nil)
    private let nextPick = Atomic(0)
    private let gate = StreamGate(name: "HTTP/2 client transport")

    /// A transport for `target`; nothing connects until the first RPC.
    ///
    /// - Throws: a `TLSError` when TLS files are missing or invalid.
    public init(
        target: Target, security: Security = .plaintext, config: Config = .defaults, serviceConfig: ServiceConfig = ServiceConfig()
    ) throws {
        self.target = target
        self.security = security
        self.config = config
        let tls = try security.tlsConfig.map { tlsConfig in
            (try TLSContext.client(tlsConfig), TLSEngine.ServerName(tlsConfig.serverHostnameOverride ?? target.host))
        }
        self.serviceConfig = serviceConfig
        settings = ConnectionSettings(
            loops: try EventLoopGroup(threads: config.eventLoopThreads, name: "pitlane-client", timeSource: config.timeSource),
            config: config, tls: tls, authority: target.authority)
    }

    deinit {
        settings.loops.shutdownInBackground()
    }

    /// The entry for `descriptor` in the service config passed to `init`, if it has one.
    public func config(forMethod descriptor: MethodDescriptor) -> MethodConfig? {
        serviceConfig.config(for: descriptor)
    }

    /// The time source from ``Config/timeSource``.
    public var timeSource: TimeSource { config.timeSource }

    /// The message codec from ``Config/codec``.
    public var messageCodec: MessageCodec { config.codec }

    /// The event loop, when there is one and ``Config/runsCallsOnEventLoop`` is set; with
    /// several, a call's connection is not known before it picks one, so calls run wherever
    /// their callers do.
    public var callExecutor: (any TaskExecutor)? {
        guard config.runsCallsOnEventLoop, settings.loops.loops.count == 1 else { return nil }
        return settings.loops.loops[0]
    }

    /// Waits until ``beginGracefulShutdown()`` is called and the last open stream ends, then drains and closes every connection.
    ///
    /// Connections themselves are opened lazily, by the first RPC, not by this method.
    public func connect() async throws {
        await gate.waitUntilDrained()
        let all = subchannels.withLock { subchannels in
            defer { if subchannels == nil { subchannels = [] } }
            return subchannels ?? []
        }
        for connection in all.compactMap({ $0.shutdown() }) {
            connection.loop.execute { connection.drain() }
        }
    }

    /// Refuses new streams from now on; streams already open run to their end, then `connect()` returns.
    public func beginGracefulShutdown() {
        gate.beginShutdown()
    }

    /// A ready connection from the subchannel this RPC picks.
    private func readyConnection(waitForReady: Bool) async throws -> HTTP2ClientConnection {
        try await pick().readyConnection(waitForReady: waitForReady)
    }

    /// Pick-first: the one subchannel. Round-robin: the next ready one in turn, while the
    /// others connect in the background; with none ready, the next that is not backing off.
    private func pick() async throws -> Subchannel {
        let all = try await allSubchannels()
        guard all.count > 1 else {
            guard let only = all.first else { throw RPCError(code: .unavailable, message: "the transport has shut down") }
            return only
        }
        let turn = nextPick.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        var ready: [Subchannel] = []
        for subchannel in all {
            if subchannel.isReady { ready.append(subchannel) } else { subchannel.warmUp() }
        }
        if !ready.isEmpty { return ready[turn % ready.count] }
        let eligible = all.filter { !$0.isBackingOff }
        return eligible.isEmpty ? all[turn % all.count] : eligible[turn % eligible.count]
    }

    private func allSubchannels() async throws -> [Subchannel] {
        if let made = subchannels.withLock({ $0 }) { return made }
        let made: [Subchannel]
        switch config.loadBalancing {
        case .pickFirst:
            made = [Subchannel(name: target.description, settings: settings, addresses: { [target] in try await target.resolve() })]
        case .roundRobin:
            let addresses: [SocketAddress]
            do {
                addresses = try await target.resolve()
            } catch {
                throw RPCError(code: .unavailable, message: "cannot resolve \(target): \(error)")
            }
            guard !addresses.isEmpty else { throw RPCError(code: .unavailable, message: "\(target) resolved to no address") }
            made = addresses.map { address in
                Subchannel(name: address.description, settings: settings, addresses: { [address] })
            }
        }
        // The first RPCs may race here; the first to finish wins and the others use its list.
        return subchannels.withLock { subchannels in
            if let existing = subchannels { return existing }
            subchannels = made
            return made
        }
    }

    /// Opens an HTTP/2 stream for one attempt of an RPC on a ready connection and runs `body` with it.
    ///
    /// Throws `.unavailable` when the transport is shutting down, or when connecting fails and `options.waitForReady` is not set
    /// (with it set, the call waits through reconnection backoff). The stream is released when `body` returns.
    public nonisolated(nonsending) func withStream<T: Sendable>(
        descriptor: MethodDescriptor, options: CallOptions, _ body: (ClientRPCStream) async throws -> T
    ) async throws -> T {
        try gate.open()
        defer { gate.close() }
        let binding = ConnectionBinding(try await readyConnection(waitForReady: options.waitForReady ?? false))
        let call = ClientCall(
            protocol: config.wireProtocol, codec: config.codec, kind: options.rpcKind,
            compression: options.compression.flatMap { $0 == .none ? nil : $0 }, maxMessageBytes: config.maxMessageBytes)
        let stream = ClientStream(descriptor: descriptor, call: call, outboundHighWatermark: config.streamWindowBytes, binding: binding)
        let rpc = ClientRPCStream(
            descriptor: descriptor, inbound: RPCAsyncSequence(stream: stream.inbound),
            outbound: .init(
                wrapping: ClientStreamWriter(
                    binding: binding, stream: stream, timeout: options.timeout, encoder: call.encoder,
                    reconnect: { [self] in try await self.readyConnection(waitForReady: false) }
                )),
            wireCounts: stream.outbound
        )
        defer {
            stream.inbound.finishConsuming()
            let connection = binding.connection
            connection.loop.execute { connection.release(stream) }
        }
        return try await body(rpc)
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
