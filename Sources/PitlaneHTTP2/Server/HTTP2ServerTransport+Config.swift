import PitlaneCore

extension HTTP2ServerTransport {
    /// Limits and timing, grouped by layer; every value documented with its default and unit.
    ///
    /// ```swift
    /// var config = HTTP2ServerTransport.Config.defaults
    /// config.http2.maxConcurrentStreams = 1_000
    /// config.connection.maxIdle = .seconds(300)
    /// config.rpc.responseCompression = .gzip
    /// ```
    public struct Config: Sendable {
        /// The event loops connections and handlers run on.
        public var eventLoops = EventLoops()
        /// One connection's life: how long it may take to start, stay idle, and live.
        public var connection = Connection()
        /// HTTP/2: streams, flow-control windows, header lists, and the ping and reset policies.
        public var http2 = HTTP2()
        /// What every RPC may send and how responses are compressed.
        public var rpc = RPC()
        /// The time the preface, idle, age and ping-policy timers and RPC deadlines run on.
        /// Default real time; tests step a `ManualClock`.
        public var timeSource = TimeSource.continuous
        /// What the port serves beside gRPC over HTTP/2, plugged in by another module
        /// (PitlaneWeb's `config.web`). Default nil: gRPC over HTTP/2 alone.
        package var protocolHandler: (any ServerProtocolHandler)?

        /// The defaults, as ``defaults`` gives them.
        public init() {}

        /// Every value at its default.
        public static var defaults: Config { Config() }

        /// The event loops connections and handlers run on.
        public struct EventLoops: Sendable {
            /// Event loop threads. Default one per core (`System.coreCount`).
            public var threads = System.coreCount
            /// How long an event loop out of work may poll for the next request before it
            /// sleeps. Default 200 µs; zero sleeps at once. The window adapts: it opens while
            /// requests come soon after the loop runs out of work (a caller with one call in
            /// flight), and closes while traffic is sparse, so an idle server uses no CPU. It
            /// spares each request the wake-up of a sleeping thread, which on a virtual machine
            /// is tens of microseconds; see `EventLoop.start(name:timeSource:idlePollLimit:)`.
            public var idlePollLimit = Duration.microseconds(200)
            /// Whether handlers run on their connection's event loop. Default true: no thread
            /// hop per message. Set false if handlers block (long computations, blocking I/O),
            /// so they run on Swift's global executor and never stall the loop's other
            /// connections.
            public var runHandlers = true

            /// The defaults.
            public init() {}
        }

        /// One connection's life.
        public struct Connection: Sendable {
            /// How long a new connection has to send its first bytes; with TLS, to complete the
            /// handshake and send its first HTTP/2 bytes. Default 10 s.
            public var prefaceTimeout: Duration = .seconds(10)
            /// Close connections that have had no open stream for this long (GOAWAY, then
            /// close). Default nil: idle connections stay open.
            public var maxIdle: Duration?
            /// Ask connections to go away after this long (GOAWAY; streams finish), and close
            /// them ``maxAgeGrace`` later whatever is open. Default nil: no age limit.
            public var maxAge: Duration?
            /// How long streams may still run after ``maxAge``'s GOAWAY. Default 30 s.
            public var maxAgeGrace: Duration = .seconds(30)
            /// Told about each TLS connection whose handshake failed (the client's address and
            /// why: an untrusted or missing client certificate, no ALPN "h2", a plaintext
            /// client); the connection is closed and the server carries on. Default: a line on
            /// standard error.
            public var onTLSHandshakeFailure: (@Sendable (_ peer: String, _ error: TLSError) -> Void)? = { peer, error in
                logToStandardError("pitlane: TLS handshake with \(peer) failed: \(error)")
            }

            /// The defaults.
            public init() {}
        }

        /// HTTP/2's settings and policies.
        public struct HTTP2: Sendable {
            /// Streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
            /// Default 100.
            public var maxConcurrentStreams = 100
            /// The largest header list accepted, in bytes. Default 16 KiB.
            public var maxHeaderListBytes = 16_384
            /// Each stream's flow-control window, in bytes: how much a peer may send before the
            /// handler reads, and how much response data queues before the handler waits.
            /// Default 64 KiB.
            public var streamWindowBytes = 65_535
            /// The connection's flow-control window, in bytes: how much all streams together
            /// may have unread. Larger than a stream's, so a stream whose reader stalls cannot
            /// stall the others on its connection. Default 4 MiB.
            public var connectionWindowBytes = 4 * 1024 * 1024
            /// The shortest interval between client PINGs the server tolerates (gRPC's
            /// `GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS`). A client pinging more
            /// often than this, more than ``maxPingStrikes`` times, gets GOAWAY
            /// ENHANCE_YOUR_CALM "too_many_pings" and is disconnected. Default 5 min.
            public var minimumPingInterval: Duration = .seconds(300)
            /// Pings tolerated below ``minimumPingInterval`` before the server acts. Default 2.
            public var maxPingStrikes = 2
            /// Rapid-reset protection (CVE-2023-44487): a client may reset this many streams at
            /// once, and ``streamResetsPerSecond`` more each second; past that the connection
            /// gets GOAWAY and is closed. Default 1,000.
            public var maxStreamResetBurst = 1_000
            /// Stream resets a client earns back each second; see ``maxStreamResetBurst``.
            /// Default 33.
            public var streamResetsPerSecond = 33

            /// The defaults.
            public init() {}
        }

        /// What every RPC may send, and response compression.
        public struct RPC: Sendable {
            /// The largest request message accepted, in bytes; larger ones fail with
            /// `.resourceExhausted` before they are buffered. Default 4 MiB.
            public var maxMessageBytes = 4 * 1024 * 1024
            /// Compress responses with this when the client accepts it (`grpc-accept-encoding`).
            /// Default nil: responses are not compressed. Compressed requests are always
            /// accepted.
            public var responseCompression: CompressionAlgorithm?

            /// The defaults.
            public init() {}
        }

        var callLimits: ServerCallLimits {
            ServerCallLimits(maxMessageBytes: rpc.maxMessageBytes, responseCompression: rpc.responseCompression)
        }
    }
}
