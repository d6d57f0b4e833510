import Orders
import PitlaneCore
import PitlaneLive
import ServiceHarness
import Synchronization
import TestSupport
import Testing

/// OrderStreamStore against the service in process: the bootstrap deadline.
@Suite("OrderStreamStore in process", .timeLimit(.minutes(1)))
struct OrderStreamStoreTests {
    /// Holds the first GetOrder until the client gives up on it.
    struct StallFirstGetOrder: ServerInterceptor {
        let calls = Locked(0)

        func intercept<Input: Sendable, Output: Sendable>(
            request: StreamingServerRequest<Input>, context: ServerContext,
            next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
        ) async throws -> StreamingServerResponse<Output> {
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            if context.descriptor.method == "GetOrder", call == 1 {
                await context.cancellation.wait()
                return StreamingServerResponse(error: RPCError(code: .cancelled, message: "the client gave up"))
            }
            return try await next(request, context)
        }
    }

    @Test("GetOrder runs under a deadline: a bootstrap that hangs times out, is retried, and the store goes live")
    func bootstrapDeadline() async throws {
        let log = try OrderLog(path: ":memory:")
        _ = try await log.createOrder(id: "o", customerID: "alice", etaDisplay: "5 min")
        let access = OrderAccess(users: ["t": "alice"])
        let clock = ManualClock()
        let transport = InProcessTransport(timeSource: .manual(clock))
        let stall = StallFirstGetOrder()
        let server = GRPCServer(
            transport: transport.server, services: [OrderTrackingService(log: log, access: access)],
            interceptors: [stall, access.interceptor()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await withGRPCClient(transport: transport.client, interceptors: [BearerTokenClientInterceptor(token: "t")]) { client in
                var settings = OrderStreamStore<InProcessTransport.Client>.Settings()
                settings.bootstrapTimeout = .seconds(1)
                settings.backoff = ReconnectBackoff(initial: .milliseconds(10), maximum: .milliseconds(50))
                let (states, sink) = AsyncStream.makeStream(of: FeedConnectionState.self)
                let store = OrderStreamStore(orderID: "o", client: client, settings: settings) { change in
                    if case .connection(let state) = change { sink.yield(state) }
                }
                let running = Task { await store.run() }
                var changes = states.makeAsyncIterator()
                #expect(await changes.next() == .connecting)
                // The first GetOrder hangs in the server until its deadline.
                try await eventually("the first GetOrder reaches the server") { stall.calls.value == 1 }
                clock.advance(by: .seconds(1))
                #expect(await changes.next() == .retrying(attempt: 1))
                await clock.waitForArmedTimers(atLeast: 1)  // the backoff
                clock.advance(by: .milliseconds(50))
                #expect(await changes.next() == .connecting)
                #expect(await changes.next() == .live)
                #expect(store.order?.etaText == "5 min" && store.bootstrapCount == 1)
                running.cancel()
                await running.value
                #expect(store.connectionState == .idle)
            }
        }
    }
}
