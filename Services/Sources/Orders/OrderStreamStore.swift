import Glibc
import PitlaneCore
import Synchronization

/// The state of an `OrderStreamStore`'s connection.
public enum OrderConnectionState: Sendable, Equatable {
    /// Not running (before `run()`, after it returned).
    case idle
    /// Bootstrapping with GetOrder, or opening the watch.
    case connecting
    /// The watch is open: updates arrive as they are published.
    case live
    /// Waiting before attempt `attempt` to reconnect.
    case retrying(attempt: Int)
    /// Given up: retrying cannot help (authentication, permission, no such order).
    case failed(String)
}

/// Exponential backoff with full jitter: attempt n waits a uniformly random time between zero
/// and `min(maximum, initial × multiplier^(n-1))`, so clients cut off together do not come back
/// together.
public struct ReconnectBackoff: Sendable {
    public var initial: Duration
    public var multiplier: Double
    public var maximum: Duration

    public init(initial: Duration = .milliseconds(500), multiplier: Double = 2, maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
    }

    /// The ceiling for attempt `attempt` (from 1).
    public func ceiling(attempt: Int) -> Duration {
        let growth = pow(multiplier, Double(max(0, attempt - 1)))
        return min(maximum, initial * min(growth, 1e9))
    }

    /// A delay for attempt `attempt`, drawn from `generator`.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        ceiling(attempt: attempt) * Double.random(in: 0...1, using: &generator)
    }
}

/// The blog's `OrderStreamStore` without SwiftUI: one order, kept current over a stream.
///
/// `run()` bootstraps with `GetOrder` under a deadline, then watches from the snapshot's
/// `latest_update_id`. When the watch fails for a transient reason or ends cleanly, it
/// reconnects after `ReconnectBackoff` and resumes from the last update it applied — nothing
/// is applied twice or skipped. `.outOfRange` (the server no longer has the updates after that
/// position) makes it bootstrap again; `.unauthenticated`, `.permissionDenied` and `.notFound`
/// end it in `.failed`; cancelling its task is not an error: it returns in `.idle`.
///
/// Changes go to `onChange`, in order, one at a time: the store waits for it, so a slow
/// observer slows the stream (and the server ends a watcher that falls too far behind; the
/// store then resumes).
public final class OrderStreamStore<Transport: ClientTransport>: Sendable {
    public struct Settings: Sendable {
        /// The deadline of each GetOrder.
        public var bootstrapTimeout: Duration = .seconds(5)
        public var backoff = ReconnectBackoff()
        public init() {}
    }

    /// What `onChange` hears about.
    public enum Change: Sendable {
        /// A snapshot replaced the order (the first bootstrap, and after `.outOfRange`).
        case bootstrapped(OrderViewState, latestUpdateID: String)
        /// An update was applied (position markers only move `lastUpdateID`; they come too).
        case applied(OrderUpdate, OrderViewState)
        case connection(OrderConnectionState)
    }

    private struct State {
        var order: OrderViewState?
        var lastUpdateID: String?
        var connection = OrderConnectionState.idle
        var bootstraps = 0
    }

    public let orderID: String
    private let client: Orders_V1_OrderTracking.Client<Transport>
    private let settings: Settings
    /// The client transport's: backoff waits on the same clock as the RPCs' deadlines.
    private let timeSource: TimeSource
    private let onChange: @Sendable (Change) async -> Void
    private let state = Mutex(State())

    public init(
        orderID: String, client: GRPCClient<Transport>, settings: Settings = Settings(),
        onChange: @escaping @Sendable (Change) async -> Void = { _ in }
    ) {
        self.orderID = orderID
        self.client = Orders_V1_OrderTracking.Client(wrapping: client)
        timeSource = client.transport.timeSource
        self.settings = settings
        self.onChange = onChange
    }

    /// The order as last applied; nil before the first bootstrap.
    public var order: OrderViewState? { state.withLock { $0.order } }
    /// The update id of the last update applied (or of the snapshot).
    public var lastUpdateID: String? { state.withLock { $0.lastUpdateID } }
    public var connectionState: OrderConnectionState { state.withLock { $0.connection } }
    /// How many snapshots were applied: 1 plus one per re-bootstrap.
    public var bootstrapCount: Int { state.withLock { $0.bootstraps } }

    /// Keeps the order current until the task is cancelled (returns in `.idle`) or retrying
    /// cannot help (returns in `.failed`).
    public func run() async {
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        while !Task.isCancelled {
            var bootstrapping = false
            do {
                await set(.connecting)
                if lastUpdateID == nil {
                    bootstrapping = true
                    try await bootstrap()
                    bootstrapping = false
                }
                if try await watch() { attempt = 0 }
            } catch {
                if Task.isCancelled || error is CancellationError { break }
                // A watch that went live and then failed starts the backoff over.
                if case .live = connectionState { attempt = 0 }
                switch Self.classify(error, duringBootstrap: bootstrapping) {
                case .fatal(let message):
                    await set(.failed(message))
                    return
                case .rebootstrap:
                    state.withLock { $0.lastUpdateID = nil }
                case .transient:
                    break
                }
            }
            attempt += 1
            await set(.retrying(attempt: attempt))
            do {
                try await timeSource.sleep(for: settings.backoff.delay(attempt: attempt, using: &generator))
            } catch {
                break
            }
        }
        await set(.idle)
    }

    private func bootstrap() async throws {
        let snapshot = try await client.getOrder(
            .with { $0.orderID = orderID }, options: .defaults.with { $0.timeout = settings.bootstrapTimeout })
        let view = OrderViewState(snapshot)
        state.withLock { state in
            state.order = view
            state.lastUpdateID = snapshot.latestUpdateID
            state.bootstraps += 1
        }
        await onChange(.bootstrapped(view, latestUpdateID: snapshot.latestUpdateID))
    }

    /// Watches from the last applied update until the stream ends; true if it went live.
    private func watch() async throws -> Bool {
        let request = Orders_V1_WatchOrderRequest.with {
            $0.orderID = orderID
            $0.sinceUpdateID = lastUpdateID ?? ""
        }
        return try await client.watchOrder(request) { response in
            guard case .success = response.accepted else {
                for try await _ in response.messages {}  // throws the error
                return false
            }
            await self.set(.live)
            for try await update in response.messages {
                try Task.checkCancellation()
                let view: OrderViewState? = self.state.withLock { state in
                    state.lastUpdateID = update.updateID
                    state.order?.apply(update)
                    return state.order
                }
                if let view { await self.onChange(.applied(update, view)) }
            }
            return true
        }
    }

    private func set(_ connection: OrderConnectionState) async {
        let changed = state.withLock { state in
            defer { state.connection = connection }
            return state.connection != connection
        }
        if changed { await onChange(.connection(connection)) }
    }

    private enum Recovery {
        case transient
        case rebootstrap
        case fatal(String)
    }

    /// What to do after `error`: a position the server no longer accepts means bootstrapping
    /// again — unless bootstrapping itself failed that way, which retrying cannot fix.
    private static func classify(_ error: any Error, duringBootstrap: Bool) -> Recovery {
        guard let error = error as? RPCError else { return .transient }
        switch error.code {
        case .unauthenticated, .permissionDenied, .notFound, .unimplemented:
            return .fatal("\(error.code): \(error.message)")
        case .outOfRange, .invalidArgument:
            return duringBootstrap ? .fatal("\(error.code): \(error.message)") : .rebootstrap
        default:
            return .transient
        }
    }
}
