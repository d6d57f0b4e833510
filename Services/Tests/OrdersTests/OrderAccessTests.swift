import Foundation
import Orders
import PitlaneCore
import PitlaneHTTP2
import PitlaneHealth
import PitlaneLive
import ServiceHarness
import TestSupport
import Testing

/// Authentication, ownership and the error statuses of the order tracker, and FollowOrder.
@Suite("orders-server: auth, errors, FollowOrder", .timeLimit(.minutes(5)))
struct OrderAccessTests {
    @Test("no token is UNAUTHENTICATED, an unknown token PERMISSION_DENIED, another customer's order PERMISSION_DENIED")
    func authentication() async throws {
        try await OrdersServer.with { server in
            let start = try await server.withOrders(token: "alice-token") { alice in
                try await alice.createOrder(.with { $0.orderID = "alices" }).latestUpdateID
            }
            // Only the order tracker asks for a token: health checks (and chat) do not.
            try await server.withClient(token: nil) { client in
                let health = Grpc_Health_V1_Health.Client(wrapping: client)
                for service in ["", "orders.v1.OrderTracking", "chat.v1.ChatRoom"] {
                    let status = try await health.check(.with { $0.service = service }).status
                    #expect(status == .serving, "'\(service)'")
                }
            }
            try await server.withOrders(token: nil) { anonymous in
                #expect(await rpcError { _ = try await anonymous.getOrder(.with { $0.orderID = "alices" }) }?.code == .unauthenticated)
                #expect(await rpcError { _ = try await anonymous.collect("alices", since: start, count: 1) }?.code == .unauthenticated)
            }
            try await server.withOrders(token: "stolen-token") { stranger in
                #expect(await rpcError { _ = try await stranger.getOrder(.with { $0.orderID = "alices" }) }?.code == .unauthenticated)
            }
            try await server.withOrders(token: "bob-token") { bob in
                #expect(await rpcError { _ = try await bob.getOrder(.with { $0.orderID = "alices" }) }?.code == .permissionDenied)
                #expect(await rpcError { _ = try await bob.collect("alices", since: start, count: 1) }?.code == .permissionDenied)
                #expect(await rpcError { _ = try await bob.publish("mine now", to: "alices") }?.code == .permissionDenied)
                #expect(
                    await rpcError {
                        _ = try await bob.createOrder(
                            .with {
                                $0.orderID = "for-alice"
                                $0.customerID = "alice"
                            })
                    }?.code == .permissionDenied)
                let followError = await rpcError { try await bob.follow("alices", since: start, include: []) { _ in false } }
                #expect(followError?.code == .permissionDenied)
                // Bob's own order is his.
                let bobs = try await bob.createOrder(.with { $0.orderID = "bobs" })
                #expect(bobs.customerID == "bob")
            }
            try await server.withOrders(token: "staff-token") { staff in
                let alices = try await staff.getOrder(.with { $0.orderID = "alices" })
                let created = try await staff.createOrder(
                    .with {
                        $0.orderID = "for-alice"
                        $0.customerID = "alice"
                    })
                #expect(alices.customerID == "alice" && created.customerID == "alice")
            }
            // The client library stops at once on an authorization failure: no retrying.
            try await server.withClient(token: "bob-token") { client in
                let states = Locked<[FeedConnectionState]>([])
                let store = OrderStreamStore(orderID: "alices", client: client) { change in
                    if case .connection(let state) = change { states.withLock { $0.append(state) } }
                }
                await store.run()
                #expect(states.value.count == 2 && states.value.first == .connecting)
                guard case .failed(let message) = store.connectionState else {
                    Issue.record("\(store.connectionState)")
                    return
                }
                #expect(message.contains("not yours"))
            }
        }
    }

    @Test("ListOrders: a customer's own orders, newest first; staff see every order; the limit holds")
    func listOrders() async throws {
        try await OrdersServer.with { server in
            try await server.withOrders(token: "alice-token") { alice in
                for id in ["a1", "a2", "a3"] { _ = try await alice.createOrder(.with { $0.orderID = id }) }
                let listed = try await alice.listOrders(Orders_V1_ListOrdersRequest())
                #expect(listed.orders.map(\.orderID) == ["a3", "a2", "a1"])
                #expect(listed.orders.allSatisfy { $0.customerID == "alice" && $0.status == .received })
                let limited = try await alice.listOrders(.with { $0.limit = 2 })
                #expect(limited.orders.count == 2)
            }
            try await server.withOrders(token: "bob-token") { bob in
                _ = try await bob.createOrder(.with { $0.orderID = "b1" })
                let bobs = try await bob.listOrders(Orders_V1_ListOrdersRequest())
                #expect(bobs.orders.map(\.orderID) == ["b1"])
            }
            try await server.withOrders(token: "staff-token") { staff in
                let every = try await staff.listOrders(Orders_V1_ListOrdersRequest())
                #expect(Set(every.orders.map(\.orderID)) == ["a1", "a2", "a3", "b1"])
            }
            try await server.withOrders(token: nil) { anonymous in
                let error = await rpcError { _ = try await anonymous.listOrders(Orders_V1_ListOrdersRequest()) }
                #expect(error?.code == .unauthenticated)
            }
        }
    }

    @Test("unknown order NOT_FOUND; malformed, another order's or a future token INVALID_ARGUMENT; another epoch's OUT_OF_RANGE")
    func errors() async throws {
        try await OrdersServer.with { server in
            try await OrdersServer.with { other in
                let foreign = try await other.withOrders(token: "alice-token") { alice in
                    _ = try await alice.createOrder(.with { $0.orderID = "o" })
                    return try await alice.publish("elsewhere", to: "o").updateID
                }
                try await server.withOrders(token: "alice-token") { alice in
                    try await checkErrors(alice, foreign: foreign)
                }
            }
        }
    }

    private func checkErrors(_ alice: OrdersClient, foreign: String) async throws {
        _ = try await alice.createOrder(.with { $0.orderID = "o" })
        let second = try await alice.createOrder(.with { $0.orderID = "p" }).latestUpdateID
        let duplicate = await rpcError { _ = try await alice.createOrder(.with { $0.orderID = "o" }) }
        #expect(duplicate?.code == .alreadyExists)
        let unknownGet = await rpcError { _ = try await alice.getOrder(.with { $0.orderID = "nope" }) }
        let unknownWatch = await rpcError { _ = try await alice.collect("nope", since: "", count: 1) }
        let unknownPublish = await rpcError { _ = try await alice.publish("x", to: "nope") }
        #expect([unknownGet?.code, unknownWatch?.code, unknownPublish?.code] == [.notFound, .notFound, .notFound])
        for token in ["garbage", "u1" + String(repeating: "z", count: 36), second] {
            let error = await rpcError { _ = try await alice.collect("o", since: token, count: 1) }
            #expect(error?.code == .invalidArgument, "\(token)")
        }
        // Order "o" has no updates here, while the other server's token is at its update 1.
        let otherEpoch = await rpcError { _ = try await alice.collect("o", since: foreign, count: 1) }
        #expect(otherEpoch?.code == .outOfRange && otherEpoch?.message.contains("epoch") == true, "\(String(describing: otherEpoch))")
        let noEvent = await rpcError { _ = try await alice.publishUpdate(.with { $0.orderID = "o" }) }
        #expect(noEvent?.code == .invalidArgument)
        // A FollowOrder stream follows one order.
        let switched = await rpcError {
            try await alice.followOrder { writer in
                try await writer.write(.with { $0.orderID = "o" })
                try await writer.write(.with { $0.orderID = "p" })
                try await Task.sleep(for: .seconds(3600))
            } onResponse: { response in
                for try await _ in response.messages {}
            }
        }
        #expect(switched?.code == .invalidArgument)
    }

    @Test("the epoch survives a restart: tokens stay valid; the snapshot reflects every update")
    func restartKeepsEpochAndState() async throws {
        try await OrdersServer.with { server in
            let (start, published) = try await server.withOrders(token: "alice-token") { alice in
                let start = try await alice.createOrder(
                    .with {
                        $0.orderID = "keep"
                        $0.etaDisplay = "30 min"
                    }
                ).latestUpdateID
                var published: [OrderUpdate] = []
                published.append(
                    try await alice.publishUpdate(
                        .with {
                            $0.orderID = "keep"
                            $0.statusChanged = .with { $0.status = .outForDelivery }
                        }))
                published.append(
                    try await alice.publishUpdate(
                        .with {
                            $0.orderID = "keep"
                            $0.courierMoved = .with {
                                $0.latitude = 52.52
                                $0.longitude = 13.40
                            }
                        }))
                published.append(try await alice.publish("Picked up", to: "keep"))
                return (start, published)
            }
            await server.stop()
            try await server.restart()
            try await server.withOrders(token: "alice-token") { alice in
                let again = try await alice.collect("keep", since: start, count: 3)
                #expect(again.map(\.updateID) == published.map(\.updateID))
                let snapshot = try await alice.getOrder(.with { $0.orderID = "keep" })
                #expect(snapshot.status == .outForDelivery && snapshot.etaDisplay == "30 min")
                #expect(snapshot.courier.latitude == 52.52 && snapshot.timeline.map(\.title) == ["Picked up"])
                #expect(snapshot.latestUpdateID == published.last?.updateID)
            }
        }
    }

    @Test("FollowOrder: skipped kinds advance the resume position; the include set changes mid-stream")
    func followOrder() async throws {
        try await OrdersServer.with { server in
            try await server.withOrders(token: "alice-token") { alice in
                let start = try await alice.createOrder(.with { $0.orderID = "f" }).latestUpdateID
                @Sendable func move(_ step: Double) async throws -> OrderUpdate {
                    try await alice.publishUpdate(
                        .with {
                            $0.orderID = "f"
                            $0.courierMoved = .with { $0.latitude = step }
                        })
                }
                for step in 1...3 { _ = try await move(Double(step)) }
                let status = try await alice.publishUpdate(
                    .with {
                        $0.orderID = "f"
                        $0.statusChanged = .with { $0.status = .preparing }
                    })

                // Status only, from the start: the courier moves are skipped, the status arrives, and
                // the position reaches it.
                let (changes, change) = AsyncStream.makeStream(of: [EventKind].self)
                change.yield([.status])
                let received = Locked<[OrderUpdate]>([])
                let lastCourier = try await alice.followOrder { writer in
                    for await kinds in changes {
                        try await writer.write(
                            .with {
                                $0.orderID = "f"
                                $0.sinceUpdateID = start
                                $0.include = kinds
                            })
                    }
                } onResponse: { response -> OrderUpdate? in
                    var probe: OrderUpdate?
                    for try await update in response.messages {
                        received.withLock { $0.append(update) }
                        if update.updateID == status.updateID {
                            // Now courier only: publish moves until one arrives as a move (the change
                            // and the publish race; each skipped one comes back as a marker).
                            change.yield([.courier])
                            probe = try await move(10)
                        } else if let sent = probe, update.updateID == sent.updateID {
                            if case .courierMoved = update.event {
                                change.finish()  // half-close ends the RPC
                                return update
                            }
                            probe = try await move(10)
                        }
                    }
                    return nil
                }
                let updates = received.value
                #expect(
                    updates.filter { $0.event != nil }.allSatisfy {
                        if case .statusChanged = $0.event {
                            true
                        } else if case .courierMoved = $0.event {
                            $0.updateID != updates.first?.updateID
                        } else {
                            false
                        }
                    })
                #expect(updates.first { $0.event != nil }?.updateID == status.updateID)
                let ids = updates.map(\.updateID)
                #expect(ids == ids.sorted() && Set(ids).count == ids.count, "in order, once each")
                let resumeFrom = try #require(lastCourier).updateID

                // Resuming from the last position sends nothing already covered.
                let eta = try await alice.publishUpdate(
                    .with {
                        $0.orderID = "f"
                        $0.etaChanged = .with { $0.etaDisplay = "5 min" }
                    })
                let next = try await alice.collect("f", since: resumeFrom, count: 1)
                #expect(next.map(\.updateID) == [eta.updateID])
            }
        }
    }
}

extension OrdersClient {
    /// FollowOrder with one request; `handle` returns false to stop.
    func follow(_ orderID: String, since: String, include: [EventKind], handle: @escaping @Sendable (OrderUpdate) -> Bool) async throws {
        try await followOrder { writer in
            try await writer.write(
                .with {
                    $0.orderID = orderID
                    $0.sinceUpdateID = since
                    $0.include = include
                })
            try await Task.sleep(for: .seconds(3600))
        } onResponse: { response in
            for try await update in response.messages where !handle(update) { return }
        }
    }
}

@Suite("orders-server and grpcio", .timeLimit(.minutes(5)))
struct OrdersGrpcioTests {
    @Test("Python grpcio, with stubs it generates from Protos/orders.proto and chat.proto, tracks an order and chats")
    func grpcioClient() async throws {
        try await OrdersServer.with { server in
            let python = OrdersServer.root.appending(path: ".venv/bin/python").path
            let (status, output) = try await runProcess(
                python,
                [
                    OrdersServer.root.appending(path: "Tests/Peers/orders_peer.py").path,
                    "--port", String(server.port),
                    "--protos", Peers.repositoryRoot.appending(path: "Protos").path,
                ])
            #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
        }
    }

    @Test("The Connect runtime for Python tracks an order over Connect and gRPC-Web, HTTP/1.1 and HTTP/2")
    func webClients() async throws {
        try await OrdersServer.with { server in
            let python = OrdersServer.root.appending(path: ".venv/bin/python").path
            let (status, output) = try await runProcess(
                python,
                [
                    OrdersServer.root.appending(path: "Tests/Peers/web_peer.py").path,
                    "--port", String(server.port), "--service", "orders",
                    "--protos", Peers.repositoryRoot.appending(path: "Protos").path,
                ])
            #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
        }
    }
}
