import PitlaneCore
import PitlaneLive
import PitlaneProtobuf
import Synchronization

/// The order tracker (`orders.v1.OrderTracking`) on an `OrderLog`.
///
/// Handlers read the caller from the metadata the authentication interceptor adds
/// (`OrderAccess.interceptor()`); a customer reaches only their own orders.
public struct OrderTrackingService: Orders_V1_OrderTracking.ServiceProtocol {
    private let log: OrderLog
    private let access: OrderAccess
    private let timeSource: TimeSource
    private let recordPublishLatency: @Sendable (Duration) -> Void

    /// - Parameters:
    ///   - timeSource: the clock publish latencies are measured on. Default real time.
    ///   - recordPublishLatency: told, for each update published, the time from its
    ///     PublishUpdate reaching the handler to the update committed (durable) and handed to
    ///     the order's watchers; orders-server exports it as `orders_publish_latency_seconds`.
    ///     Publishes that fail are not measured. Default: nothing.
    public init(
        log: OrderLog, access: OrderAccess, timeSource: TimeSource = .continuous,
        recordPublishLatency: @escaping @Sendable (Duration) -> Void = { _ in }
    ) {
        self.log = log
        self.access = access
        self.timeSource = timeSource
        self.recordPublishLatency = recordPublishLatency
    }

    public func getOrder(
        request: ServerRequest<Orders_V1_GetOrderRequest>, context: ServerContext
    ) async throws
        -> ServerResponse<OrderSnapshot>
    {
        let orderID = request.message.orderID
        let user = try OrderAccess.caller(request.metadata)
        guard let snapshot = try await log.snapshot(of: orderID) else { throw Self.notFound(orderID) }
        try access.authorize(user, forOrderOf: snapshot.customerID, orderID: orderID)
        return ServerResponse(message: snapshot)
    }

    public func listOrders(
        request: ServerRequest<Orders_V1_ListOrdersRequest>, context: ServerContext
    ) async throws
        -> ServerResponse<Orders_V1_ListOrdersResponse>
    {
        let user = try OrderAccess.caller(request.metadata)
        let limit = request.message.limit <= 0 ? 50 : min(Int(request.message.limit), 500)
        let orders = try await log.orders(of: access.staff.contains(user) ? nil : user, limit: limit)
        return ServerResponse(message: .with { $0.orders = orders })
    }

    public func createOrder(
        request: ServerRequest<Orders_V1_CreateOrderRequest>, context: ServerContext
    ) async throws
        -> ServerResponse<OrderSnapshot>
    {
        let user = try OrderAccess.caller(request.metadata)
        let customer = request.message.customerID.isEmpty ? user : request.message.customerID
        try access.authorize(user, forOrderOf: customer, orderID: request.message.orderID)
        let orderID = request.message.orderID.isEmpty ? Self.newOrderID() : request.message.orderID
        guard orderID.utf8.count <= 128 else { throw RPCError(code: .invalidArgument, message: "order ids are at most 128 bytes") }
        return ServerResponse(message: try await log.createOrder(id: orderID, customerID: customer, etaDisplay: request.message.etaDisplay))
    }

    public func publishUpdate(
        request: ServerRequest<Orders_V1_PublishUpdateRequest>, context: ServerContext
    ) async throws
        -> ServerResponse<OrderUpdate>
    {
        let received = timeSource.now
        let orderID = request.message.orderID
        try await authorize(request.metadata, orderID)
        guard let event = request.message.event.map(OrderEvent.init) else {
            throw RPCError(code: .invalidArgument, message: "an update needs an event")
        }
        let logged = try await log.publish(event, to: orderID) { [timeSource, recordPublishLatency] in
            recordPublishLatency(timeSource.now - received)
        }
        return ServerResponse(message: logged.message)
    }

    public func watchOrder(
        request: ServerRequest<Orders_V1_WatchOrderRequest>, context: ServerContext
    ) async throws
        -> StreamingServerResponse<OrderUpdate>
    {
        let orderID = request.message.orderID
        try await authorize(request.metadata, orderID)
        let start = try await log.startSequence(for: orderID, since: request.message.sinceUpdateID)
        let streamer = UpdateStreamer(log: log, orderID: orderID, include: { [] })
        return StreamingServerResponse { writer in
            try await streamer.run(after: start) { try await writer.write($0) }
            return [:]
        }
    }

    /// The first request picks the order, the position and the kinds; later ones replace the
    /// kinds on the open stream. The client's half-close ends the RPC.
    public func followOrder(
        request: StreamingServerRequest<Orders_V1_FollowOrderRequest>, context: ServerContext
    ) async throws
        -> StreamingServerResponse<OrderUpdate>
    {
        let metadata = request.metadata
        return StreamingServerResponse { writer in
            let selection = FollowSelection()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        for try await message in request.messages { try selection.receive(message) }
                        selection.finish(nil)
                    } catch {
                        selection.finish(error)
                        throw error
                    }
                }
                group.addTask {
                    guard let first = try await selection.first() else { return }
                    try await authorize(metadata, first.orderID)
                    let start = try await log.startSequence(for: first.orderID, since: first.sinceUpdateID)
                    let streamer = UpdateStreamer(log: log, orderID: first.orderID, include: { selection.include })
                    try await streamer.run(after: start) { try await writer.write($0) }
                }
                // Whichever ends first ends the RPC: the half-close, a failure, or the stream.
                let first = await group.nextResult()
                group.cancelAll()
                if case .failure(let error) = first { throw error }
            }
            return [:]
        }
    }

    private func authorize(_ metadata: Metadata, _ orderID: String) async throws {
        let user = try OrderAccess.caller(metadata)
        guard let header = try await log.header(of: orderID) else { throw Self.notFound(orderID) }
        try access.authorize(user, forOrderOf: header.customerID, orderID: orderID)
    }

    private static func notFound(_ orderID: String) -> RPCError {
        RPCError(code: .notFound, message: orderID.isEmpty ? "an order id is required" : "no order '\(orderID)'")
    }

    private static func newOrderID() -> String {
        "ord-" + String(UInt64.random(in: 0 ... .max) >> 16, radix: 36)
    }
}

extension OrderEvent {
    init(_ event: Orders_V1_PublishUpdateRequest.OneOf_Event) {
        switch event {
        case .statusChanged(let change): self = .statusChanged(change)
        case .etaChanged(let change): self = .etaChanged(change)
        case .courierMoved(let move): self = .courierMoved(move)
        case .timelineEvent(let entry): self = .timelineEvent(entry)
        }
    }
}

/// Sends one watcher every update of an order after a position, exactly once and in order
/// (a `FeedStream` of the order log), as the kinds it includes: when it has skipped some and
/// nothing else is waiting, a position marker (an update with no event) keeps the client's
/// resume position current.
struct UpdateStreamer: Sendable {
    let log: OrderLog
    let orderID: String
    /// The kinds wanted now; empty means every kind.
    let include: @Sendable () -> Set<EventKind>

    func run(after start: Int64, write: (OrderUpdate) async throws -> Void) async throws {
        var sent = start
        try await FeedStream(log: log.feed, key: orderID).run(after: start) { entry in
            let update = try LoggedUpdate(entry, in: log.feed)
            let wanted = include()
            guard wanted.isEmpty || wanted.contains(update.kind) else { return }
            try await write(update.message)
            sent = update.sequence
        } caughtUp: { through in
            guard through > sent else { return }
            try await write(.with { $0.updateID = log.token(of: orderID, sequence: through) })
            sent = through
        }
    }
}

/// Hands FollowOrder's first request to the streaming task, and keeps the `include` set that
/// later requests replace.
private final class FollowSelection: Sendable {
    private struct State {
        var first: Orders_V1_FollowOrderRequest?
        var waiter: CheckedContinuation<Orders_V1_FollowOrderRequest?, any Error>?
        var ended: Result<Void, any Error>?
        var include: Set<EventKind> = []
    }

    private let state = Mutex(State())

    var include: Set<EventKind> { state.withLock { $0.include } }

    func receive(_ request: Orders_V1_FollowOrderRequest) throws {
        let waiter: CheckedContinuation<Orders_V1_FollowOrderRequest?, any Error>? = try state.withLock { state in
            state.include = Set(request.include.filter { $0 != .unspecified })
            guard let first = state.first else {
                state.first = request
                defer { state.waiter = nil }
                return state.waiter
            }
            guard request.orderID.isEmpty || request.orderID == first.orderID else {
                throw RPCError(code: .invalidArgument, message: "a FollowOrder stream follows one order ('\(first.orderID)')")
            }
            return nil
        }
        waiter?.resume(returning: request)
    }

    func finish(_ error: (any Error)?) {
        let waiter = state.withLock { state in
            state.ended = error.map { .failure($0) } ?? .success(())
            defer { state.waiter = nil }
            return state.waiter
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: nil) }
    }

    /// The first request; nil if the client half-closed without one.
    func first() async throws -> Orders_V1_FollowOrderRequest? {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<Orders_V1_FollowOrderRequest?, any Error>? = state.withLock { state in
                if let first = state.first { return .success(first) }
                switch state.ended {
                case .failure(let error): return .failure(error)
                case .success: return .success(nil)
                case nil:
                    state.waiter = continuation
                    return nil
                }
            }
            if let result { continuation.resume(with: result) }
        }
    }
}
