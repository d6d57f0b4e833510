import Foundation
import Orders
import PitlaneCore
import PitlaneHTTP2
import PitlaneLive
import ServiceHarness
import TestSupport
import Testing

/// Resumable watching against the real `orders-server` over TCP: every update exactly once and
/// in order, across disconnects, server crashes and retention.
@Suite("orders-server: resume, crash, retention, concurrency", .timeLimit(.minutes(5)))
struct OrderResumeTests {
    @Test(
        "a watcher disconnected after every one of 1,000 updates and resumed applies exactly the published sequence",
        arguments: TestBackend.allCases)
    func disconnectEverywhere(backend: TestBackend) async throws {
        try await OrdersServer.with(backend: backend) { server in
            try await server.withOrders(token: "alice-token") { alice in
                let start = try await alice.createOrder(.with { $0.orderID = "resume" }).latestUpdateID
                let count = 1_000
                async let published: [OrderUpdate] = {
                    var acknowledged: [OrderUpdate] = []
                    for index in 0..<count { acknowledged.append(try await alice.publish("u\(index)", to: "resume")) }
                    return acknowledged
                }()
                // One update per stream: the watcher disconnects at every point of the sequence, in the
                // backlog, at the switch to live and in live updates, while the publisher runs.
                var applied: [OrderUpdate] = []
                var since = start
                var streams = 0
                while applied.count < count {
                    let next = try await alice.collect("resume", since: since, count: 1)
                    streams += 1
                    applied += next
                    if let last = next.last { since = last.updateID }
                }
                let acknowledged = try await published
                #expect(firstDifference(applied.map(\.title), (0..<count).map { "u\($0)" }) == nil)
                #expect(firstDifference(applied.map(\.updateID), acknowledged.map(\.updateID)) == nil)
                #expect(Set(applied.map(\.updateID)).count == count)
                #expect(streams == count)
                // And a single watcher from the start sees the same.
                let whole = try await alice.collect("resume", since: start, count: count)
                #expect(firstDifference(whole.map(\.updateID), acknowledged.map(\.updateID)) == nil)
            }
        }
    }

    @Test(
        "kill -9 while publishing and watching, restart: every acknowledged update arrives, once, in order", arguments: TestBackend.allCases
    )
    func crashAndRestart(backend: TestBackend) async throws {
        try await OrdersServer.with(backend: backend) { server in
            let orderID = "crash"
            let start = try await server.withOrders(token: "alice-token") {
                try await $0.createOrder(.with { $0.orderID = orderID }).latestUpdateID
            }
            let (appliedIDs, appliedSink) = AsyncStream.makeStream(of: String.self)
            let states = Locked<[FeedConnectionState]>([])
            let (liveStates, liveSink) = AsyncStream.makeStream(of: FeedConnectionState.self)
            let total = 300
            try await server.withClient(token: "alice-token") { client in
                var settings = OrderStreamStore<HTTP2ClientTransport>.Settings()
                settings.backoff = ReconnectBackoff(initial: .milliseconds(20), maximum: .milliseconds(200))
                let store = OrderStreamStore(orderID: orderID, client: client, settings: settings) { change in
                    switch change {
                    case .applied(let update, _): appliedSink.yield(update.updateID)
                    case .connection(let state):
                        states.withLock { $0.append(state) }
                        liveSink.yield(state)
                    case .bootstrapped: break
                    }
                }
                let watching = Task { await store.run() }
                // Live before the first publish: every update then arrives as an update (anything
                // published earlier would be part of the snapshot instead).
                var liveness = liveStates.makeAsyncIterator()
                while let state = await liveness.next(), state != .live {}
                let orders = OrdersClient(wrapping: client)
                let (progress, reportProgress) = AsyncStream.makeStream(of: Int.self)
                // The publisher retries each update until it is acknowledged; an update committed
                // just before the crash but never acknowledged may appear once more under a retry.
                let publisher = Task {
                    var acknowledged: [String] = []
                    let options = CallOptions.defaults.with {
                        $0.waitForReady = true
                        $0.timeout = .seconds(10)
                    }
                    for index in 0..<total {
                        while true {
                            do {
                                acknowledged.append(try await orders.publish("c\(index)", to: orderID, options: options).updateID)
                                break
                            } catch let error as RPCError
                                where error.code == .unavailable || error.code == .deadlineExceeded || error.code == .unknown
                                || error.code == .cancelled
                            {
                                continue
                            }
                        }
                        reportProgress.yield(index + 1)
                    }
                    reportProgress.finish()
                    return acknowledged
                }
                for await done in progress where done == total / 2 {
                    let (status, _) = await server.stop(signal: SIGKILL)
                    #expect(status == SIGKILL || status == 9 || status != 0)
                    try await server.restart()
                    break
                }
                let acknowledged = try await publisher.value
                // Wait (by the store's own reports) until the last acknowledged update was applied.
                var applied: [String] = []
                for await id in appliedIDs {
                    applied.append(id)
                    if id == acknowledged.last { break }
                }
                watching.cancel()
                await watching.value
                #expect(Set(applied).count == applied.count, "an update was applied twice")
                let appliedSet = Set(applied)
                #expect(acknowledged.allSatisfy(appliedSet.contains), "an acknowledged update never arrived")
                // The applied sequence is the log itself: what a fresh watcher reads from the start.
                let log = try await orders.collect(orderID, since: start, count: applied.count)
                #expect(firstDifference(log.map(\.updateID), applied) == nil)
                #expect(states.value.contains(.live) && states.value.contains { if case .retrying = $0 { true } else { false } })
                #expect(store.bootstrapCount == 1)
            }
        }
    }

    @Test(
        "PitlaneLive's ResumingSubscription over FollowOrder, a bidirectional RPC: the included kind only, across kill -9, once each, in order",
        arguments: TestBackend.allCases)
    func resumingFollowOrder(backend: TestBackend) async throws {
        try await OrdersServer.with(backend: backend) { server in
            let orderID = "bidi"
            try await server.withClient(token: "alice-token") { client in
                let tracking = Orders_V1_OrderTracking.Client(wrapping: client)
                _ = try await tracking.createOrder(.with { $0.orderID = orderID })
                let subscription = ResumingSubscription<OrderSnapshot, OrderUpdate>(
                    backoff: ReconnectBackoff(initial: .milliseconds(20), maximum: .milliseconds(200)),
                    bootstrap: {
                        let snapshot = try await tracking.getOrder(.with { $0.orderID = orderID })
                        return (snapshot, snapshot.latestUpdateID)
                    },
                    follow: { stream in
                        let (responsesEnded, endResponses) = AsyncStream.makeStream(of: Void.self)
                        try await tracking.followOrder { writer in
                            try await writer.write(
                                .with {
                                    $0.orderID = orderID
                                    $0.sinceUpdateID = stream.after
                                    $0.include = [.timeline]
                                })
                            for await _ in responsesEnded {}  // the request side stays open meanwhile
                        } onResponse: { response in
                            defer { endResponses.finish() }
                            try await stream.forward(response)
                        }
                    },
                    position: { $0.updateID })
                let titles = Locked<[String]>([])
                let states = Locked<[FeedConnectionState]>([])
                let others = Locked(0)
                let reading = Task {
                    for try await event in subscription {
                        switch event {
                        case .update(let update) where update.event == nil: break  // a position marker
                        case .update(let update):
                            if update.title.isEmpty { others.withLock { $0 += 1 } } else { titles.withLock { $0.append(update.title) } }
                        case .connection(let state): states.withLock { $0.append(state) }
                        case .bootstrapped: break
                        }
                    }
                }
                try await eventually { states.value.contains(.live) }
                func publish(_ index: Int) async throws {
                    let options = CallOptions.defaults.with {
                        $0.waitForReady = true
                        $0.timeout = .seconds(10)
                    }
                    _ = try await tracking.publishUpdate(
                        .with {
                            $0.orderID = orderID
                            if index.isMultiple(of: 2) {
                                $0.timelineEvent = .with { $0.title = "t\(index)" }
                            } else {
                                $0.courierMoved = .with { $0.latitude = Double(index) }
                            }
                        }, options: options)
                }
                for index in 0..<20 { try await publish(index) }
                _ = await server.stop(signal: SIGKILL)
                try await server.restart()
                for index in 20..<40 { try await publish(index) }
                try await eventually { titles.value.count >= 20 }
                reading.cancel()
                _ = await reading.result
                #expect(titles.value == stride(from: 0, to: 40, by: 2).map { "t\($0)" })
                #expect(others.value == 0)
                #expect(states.value.contains { if case .retrying = $0 { true } else { false } })
            }
        }
    }

    @Test("a token older than retention is OUT_OF_RANGE, and OrderStreamStore re-bootstraps by itself", arguments: TestBackend.allCases)
    func expiredTokenRebootstraps(backend: TestBackend) async throws {
        try await OrdersServer.with(["--retain-updates", "5"], backend: backend) { server in
            let orderID = "expiry"
            try await server.withOrders(token: "alice-token") { alice in
                let start = try await alice.createOrder(.with { $0.orderID = orderID }).latestUpdateID
                var published: [OrderUpdate] = []
                for index in 0..<10 { published.append(try await alice.publish("e\(index)", to: orderID)) }
                let error = await rpcError { _ = try await alice.collect(orderID, since: start, count: 1) }
                #expect(error?.code == .outOfRange)
                #expect(error?.message.contains("call GetOrder again") == true, "\(String(describing: error))")
                // The last five are kept: resuming after the fifth works, after the fourth does not.
                let lastFive = try await alice.collect(orderID, since: published[4].updateID, count: 5)
                #expect(lastFive.map(\.title) == ["e5", "e6", "e7", "e8", "e9"])
                #expect(
                    await rpcError { _ = try await alice.collect(orderID, since: published[3].updateID, count: 1) }?.code == .outOfRange)
            }

            // The store is live; while the server is down the log moves on past retention.
            let (changes, sink) = AsyncStream.makeStream(of: OrderStreamStore<HTTP2ClientTransport>.Change.self)
            try await server.withClient(token: "alice-token") { client in
                var settings = OrderStreamStore<HTTP2ClientTransport>.Settings()
                settings.backoff = ReconnectBackoff(initial: .milliseconds(20), maximum: .milliseconds(200))
                let store = OrderStreamStore(orderID: orderID, client: client, settings: settings) { sink.yield($0) }
                let watching = Task { await store.run() }
                var iterator = changes.makeAsyncIterator()
                while let change = await iterator.next() { if case .connection(.live) = change { break } }

                await server.stop(signal: SIGKILL)
                let offline = try OrderLog(database: server.openDatabase(), retention: .init(maxUpdatesPerOrder: 5))
                for index in 0..<20 { _ = try await offline.publish(.etaChanged(.with { $0.etaDisplay = "\(index) min" }), to: orderID) }
                try await server.restart()

                var sawOutOfRangeRecovery = false
                while let change = await iterator.next() {
                    if case .bootstrapped(let order, _) = change {
                        #expect(order.etaText == "19 min")
                        sawOutOfRangeRecovery = true
                    }
                    if sawOutOfRangeRecovery, case .connection(.live) = change { break }
                }
                #expect(store.bootstrapCount == 2)
                // Live again: the next update arrives.
                let update = try await OrdersClient(wrapping: client).publishUpdate(
                    .with {
                        $0.orderID = orderID
                        $0.statusChanged = .with { $0.status = .delivered }
                    })
                while let change = await iterator.next() {
                    if case .applied(let applied, let order) = change {
                        #expect(applied.updateID == update.updateID)
                        #expect(order.status == .delivered && order.etaText == "19 min")
                        break
                    }
                }
                watching.cancel()
                await watching.value
                #expect(store.connectionState == .idle)
            }
        }
    }

    @Test(
        "a store too slow for the stream is ended with RESOURCE_EXHAUSTED, resumes by itself and misses nothing",
        arguments: TestBackend.allCases)
    func slowStoreResumes(backend: TestBackend) async throws {
        try await OrdersServer.with(["--watch-buffer", "16", "--durability", "normal"], backend: backend) { server in
            let orderID = "slow"
            let total = 3_200
            try await server.withClient(token: "alice-token") { client in
                let orders = OrdersClient(wrapping: client)
                let start = try await orders.createOrder(.with { $0.orderID = orderID }).latestUpdateID
                // The observer holds the first update until everything is published: the stream
                // backs up through flow control into the server's bounded queue.
                let (released, release) = AsyncStream.makeStream(of: Void.self)
                let (appliedIDs, appliedSink) = AsyncStream.makeStream(of: String.self)
                let (liveStates, liveSink) = AsyncStream.makeStream(of: FeedConnectionState.self)
                let states = Locked<[FeedConnectionState]>([])
                let held = Locked(false)
                var settings = OrderStreamStore<HTTP2ClientTransport>.Settings()
                settings.backoff = ReconnectBackoff(initial: .milliseconds(20), maximum: .milliseconds(200))
                let store = OrderStreamStore(orderID: orderID, client: client, settings: settings) { change in
                    switch change {
                    case .applied(let update, _):
                        appliedSink.yield(update.updateID)
                        let first = held.withLock { wasHeld in
                            defer { wasHeld = true }
                            return !wasHeld
                        }
                        if first { for await _ in released { break } }
                    case .connection(let state):
                        states.withLock { $0.append(state) }
                        liveSink.yield(state)
                    case .bootstrapped: break
                    }
                }
                let watching = Task { await store.run() }
                for await state in liveStates where state == .live { break }
                // Publishers on a connection of their own: the HTTP/2 connection window (65,535
                // bytes; the Pitlane client does not raise it) is shared by every stream, so a
                // stream nobody reads stalls the other RPCs on its connection too.
                try await server.withOrders(token: "alice-token") { publisher in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for worker in 0..<8 {
                            group.addTask {
                                for index in 0..<(total / 8) { _ = try await publisher.publish("s\(worker)-\(index)", to: orderID) }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                release.yield()
                var applied: [String] = []
                let last = try await server.withOrders(token: "alice-token") {
                    try await $0.getOrder(.with { $0.orderID = orderID }).latestUpdateID
                }
                for await id in appliedIDs {
                    applied.append(id)
                    if id == last { break }
                }
                watching.cancel()
                await watching.value
                let log = try await orders.collect(orderID, since: start, count: total)
                #expect(firstDifference(applied, log.map(\.updateID)) == nil)
                #expect(states.value.contains { if case .retrying = $0 { true } else { false } }, "never cut off: \(states.value)")
                #expect(store.bootstrapCount == 1)
            }
        }
    }

    @Test(
        "8 concurrent publishers and 100 watchers on one order: one order everywhere, each publisher's in its order",
        arguments: TestBackend.allCases)
    func publishersAndWatchers(backend: TestBackend) async throws {
        try await OrdersServer.with(["--durability", "normal"], backend: backend) { server in
            let orderID = "busy"
            let publishers = 8
            let perPublisher = 50
            let watchers = 100
            let total = publishers * perPublisher
            let start = try await server.withOrders(token: "staff-token") {
                try await $0.createOrder(
                    .with {
                        $0.orderID = orderID
                        $0.customerID = "alice"
                    }
                ).latestUpdateID
            }
            let received = Locked<[[OrderUpdate]]>([])
            try await withThrowingTaskGroup(of: Void.self) { group in
                // 100 watchers from the creation point, on 4 connections: backlog, switch-over, live.
                for _ in 0..<4 {
                    group.addTask {
                        try await server.withOrders(token: "alice-token") { alice in
                            try await withThrowingTaskGroup(of: Void.self) { streams in
                                for _ in 0..<(watchers / 4) {
                                    streams.addTask {
                                        let updates = try await alice.collect(orderID, since: start, count: total)
                                        received.withLock { $0.append(updates) }
                                    }
                                }
                                try await streams.waitForAll()
                            }
                        }
                    }
                }
                group.addTask {
                    try await server.withOrders(token: "staff-token") { staff in
                        try await withThrowingTaskGroup(of: Void.self) { publishing in
                            for publisher in 0..<publishers {
                                publishing.addTask {
                                    for index in 0..<perPublisher { _ = try await staff.publish("p\(publisher)-\(index)", to: orderID) }
                                }
                            }
                            try await publishing.waitForAll()
                        }
                    }
                }
                try await group.waitForAll()
            }
            let sequences = received.value
            #expect(sequences.count == watchers)
            let reference = try #require(sequences.first)
            #expect(reference.count == total)
            for sequence in sequences { #expect(firstDifference(sequence.map(\.updateID), reference.map(\.updateID)) == nil) }
            for publisher in 0..<publishers {
                let mine = reference.map(\.title).filter { $0.hasPrefix("p\(publisher)-") }
                #expect(firstDifference(mine, (0..<perPublisher).map { "p\(publisher)-\($0)" }) == nil)
            }
        }
    }
}
