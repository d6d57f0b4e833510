import PitlaneCore
import PitlaneLive
import Synchronization

/// The blog's `OrderStreamStore` without SwiftUI: one order, kept current over a stream — a
/// `ResumingSubscription` of GetOrder and WatchOrder, folded into an `OrderViewState`.
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
        case connection(FeedConnectionState)
    }

    private struct State {
        var order: OrderViewState?
        var lastUpdateID: String?
        var connection = FeedConnectionState.idle
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
    public var connectionState: FeedConnectionState { state.withLock { $0.connection } }
    /// How many snapshots were applied: 1 plus one per re-bootstrap.
    public var bootstrapCount: Int { state.withLock { $0.bootstraps } }

    /// Keeps the order current until the task is cancelled (returns in `.idle`) or retrying
    /// cannot help (returns in `.failed`).
    public func run() async {
        let subscription = ResumingSubscription<OrderSnapshot, OrderUpdate>(
            backoff: settings.backoff, timeSource: timeSource,
            bootstrap: { [client, orderID, settings] in
                let snapshot = try await client.getOrder(
                    .with { $0.orderID = orderID }, options: .defaults.with { $0.timeout = settings.bootstrapTimeout })
                return (snapshot, snapshot.latestUpdateID)
            },
            follow: { [client, orderID] stream in
                let request = Orders_V1_WatchOrderRequest.with {
                    $0.orderID = orderID
                    $0.sinceUpdateID = stream.after
                }
                try await client.watchOrder(request) { try await stream.forward($0) }
            },
            position: { $0.updateID })
        do {
            for try await event in subscription {
                switch event {
                case .bootstrapped(let snapshot):
                    let view = OrderViewState(snapshot)
                    state.withLock { state in
                        state.order = view
                        state.lastUpdateID = snapshot.latestUpdateID
                        state.bootstraps += 1
                    }
                    await onChange(.bootstrapped(view, latestUpdateID: snapshot.latestUpdateID))
                case .update(let update):
                    let view: OrderViewState? = state.withLock { state in
                        state.lastUpdateID = update.updateID
                        state.order?.apply(update)
                        return state.order
                    }
                    if let view { await onChange(.applied(update, view)) }
                case .connection(let connection):
                    await set(connection)
                    if case .failed = connection { return }
                }
            }
        } catch {
            // Cancelled.
        }
        await set(.idle)
    }

    private func set(_ connection: FeedConnectionState) async {
        let changed = state.withLock { state in
            defer { state.connection = connection }
            return state.connection != connection
        }
        if changed { await onChange(.connection(connection)) }
    }
}
