import PitlaneCore
import Synchronization

/// What every connection of a transport shares: event loops, limits, TLS, the authority.
struct ConnectionSettings: Sendable {
    let loops: EventLoopGroup
    let config: HTTP2ClientTransport.Config
    /// TLS: the context every connection's engine comes from, and the name they verify.
    let tls: (context: TLSContext, serverName: TLSEngine.ServerName)?
    let authority: String
}

/// One connection to a list of addresses, through gRPC's connectivity states: idle,
/// connecting, ready, transient failure (with backoff), shutdown. Pick-first is one
/// subchannel over every resolved address; round-robin is one subchannel per address.
final class Subchannel: Sendable {
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

    /// How errors name what this subchannel connects to.
    let name: String
    private let addresses: @Sendable () async throws -> [SocketAddress]
    private let settings: ConnectionSettings
    private let state = Mutex(State())

    init(name: String, settings: ConnectionSettings, addresses: @escaping @Sendable () async throws -> [SocketAddress]) {
        self.name = name
        self.settings = settings
        self.addresses = addresses
    }

    /// Whether an RPC picking a subchannel should skip this one: backing off after a failure.
    var isBackingOff: Bool {
        state.withLock { state in
            if case .transientFailure(_, let retryAt) = state.connection { return settings.config.timeSource.now < retryAt }
            return false
        }
    }

    /// Whether a connection is up and taking streams.
    var isReady: Bool {
        state.withLock { state in
            if case .ready(let connection) = state.connection { return connection.isUsable }
            return false
        }
    }

    /// Starts connecting in the background if idle (or done backing off), so round-robin has
    /// every address ready before RPCs need it.
    func warmUp() {
        let start = state.withLock { state in
            switch state.connection {
            case .idle:
                break
            case .ready(let connection) where !connection.isUsable:
                break
            case .transientFailure(_, let retryAt) where settings.config.timeSource.now >= retryAt:
                break
            default:
                return false
            }
            state.connection = .connecting([])
            return true
        }
        if start { Task { _ = try? await establish() } }
    }

    /// Moves to shutdown; the ready connection, if any, is returned for draining.
    func shutdown() -> HTTP2ClientConnection? {
        state.withLock { state in
            defer { state.connection = .shutdown }
            if case .ready(let connection) = state.connection { return connection }
            return nil
        }
    }

    /// A ready connection: the current one, a new one, or — while backing off — a failure
    /// (`.unavailable`) unless the call waits for ready.
    func readyConnection(waitForReady: Bool) async throws -> HTTP2ClientConnection {
        // A new connection that closed before its first stream (a server's idle limit on a
        // slow machine, say) is no failure of the RPC: it connects once more.
        var tryAgainAllowance = 2
        while true {
            enum Next {
                case use(HTTP2ClientConnection)
                case connect, wait
                case retryAt(ContinuousClock.Instant)
                case fail(RPCError)
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
                    if settings.config.timeSource.now >= retryAt {
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
            case .retryAt(let instant): try await settings.config.timeSource.sleep(until: instant)
            case .connect, .wait:
                do {
                    return try await (next.isConnect ? establish() : waitForConnection())
                } catch is TryAgain where tryAgainAllowance > 0 {
                    tryAgainAllowance -= 1
                } catch is TryAgain {
                    throw RPCError(
                        code: .unavailable,
                        message:
                            "every new connection to \(name) closed before its first stream (3 tried); the server may be limiting idle connections"
                    )
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
        var lastError = RPCError(code: .unavailable, message: "\(name) resolved to no address")
        do {
            for address in try await addresses() {
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
        } catch let again as TryAgain {
            throw again
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
            lastError = RPCError(code: .unavailable, message: "cannot resolve \(name): \(error)")
        }
        let waiters = state.withLock { state in
            let backoff = nextBackoff(after: state.backoff)
            state.backoff = backoff
            defer { state.connection = .transientFailure(lastError, retryAt: settings.config.timeSource.now + jittered(backoff)) }
            if case .connecting(let waiters) = state.connection { return waiters }
            return []
        }
        for waiter in waiters { waiter.resume(throwing: lastError) }
        throw lastError
    }

    private func connect(to address: SocketAddress) async throws -> HTTP2ClientConnection {
        let loop = settings.loops.next()
        let socket: Socket
        do {
            socket = try Socket(for: address)
        } catch {
            throw RPCError(code: .unavailable, message: "cannot create a socket for \(address): \(error)")
        }
        let engine: TLSEngine?
        do {
            engine = try settings.tls.map { try $0.context.makeEngine(serverName: $0.serverName) }
        } catch {
            throw RPCError(code: .unavailable, message: "cannot set up TLS for \(address): \(error)")
        }
        let connection = HTTP2ClientConnection(
            socket: socket, loop: loop, authority: settings.authority, config: settings.config, tls: engine,
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
        guard let previous else { return settings.config.backoff.initial }
        return min(previous * settings.config.backoff.multiplier, settings.config.backoff.maximum)
    }

    private func jittered(_ duration: Duration) -> Duration {
        duration * Double.random(in: (1 - settings.config.backoff.jitter)...(1 + settings.config.backoff.jitter))
    }
}
