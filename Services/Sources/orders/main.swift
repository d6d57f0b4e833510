// orders: the order tracker's command-line client.
//   orders create [--id ID] [--customer USER] [--eta TEXT]
//   orders get ID
//   orders publish ID status received|preparing|out-for-delivery|delivered|canceled
//   orders publish ID eta TEXT | courier LATITUDE LONGITUDE | timeline TITLE [SUBTITLE]
//   orders watch ID [--count N]      live, across disconnects and server restarts
import Foundation
import Orders
import Pitlane
import PitlaneCommandLine
import PitlaneLive
import PitlaneObservability
import Synchronization

let usage = """
    usage: orders create [--id ID] [--customer USER] [--eta TEXT]
           orders get ID
           orders publish ID status received|preparing|out-for-delivery|delivered|canceled
           orders publish ID eta TEXT | courier LATITUDE LONGITUDE | timeline TITLE [SUBTITLE]
           orders watch ID [--count N]
    options: --host 127.0.0.1 --port 8090 | --unix PATH; --token TOKEN (or $ORDERS_TOKEN);
             --keepalive SECONDS between pings (default 10; 0: none);
             --client-metrics PATH: the calls' gRPC client metrics, Prometheus text, written at exit
    """

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("orders: \(message)\n".utf8))
    exit(status)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let options: CommandLineOptions
do {
    options = try CommandLineOptions(
        Array(CommandLine.arguments.dropFirst()), usage: usage,
        valueOptions: CommandLineOptions.transportOptions.union(["token", "id", "customer", "eta", "count"])
            .union(CommandLineOptions.clientMetricsOptions),
        flagOptions: CommandLineOptions.transportFlags)
} catch {
    fail("\(error)\n\(usage)", status: 2)
}
guard let token = options["token"] ?? ProcessInfo.processInfo.environment["ORDERS_TOKEN"] else {
    fail("a token is needed: --token TOKEN or ORDERS_TOKEN (orders-server's defaults: alice-token, bob-token, staff-token)", status: 2)
}

let target: HTTP2ClientTransport.Target
do {
    target = try options.clientTarget(defaultPort: 8090)
} catch {
    fail("\(error)\n\(usage)", status: 2)
}
var transportConfig = HTTP2ClientTransport.Config.defaults
transportConfig.backoff.initial = .milliseconds(200)
transportConfig.backoff.maximum = .seconds(5)
// A watch can be silent for minutes: pings tell a dead connection (a partition, a server that
// gave up on it) from a quiet one. orders-server tolerates pings every 5 s.
do {
    transportConfig.keepalive = try options.clientKeepalive(defaultSeconds: 10)
} catch {
    fail("\(error)\n\(usage)", status: 2)
}
let transport: HTTP2ClientTransport
do {
    transport = try HTTP2ClientTransport(target: target, security: options.clientSecurity(), config: transportConfig)
} catch {
    fail("\(error)")
}
let callOptions = CallOptions.defaults.with { $0.timeout = .seconds(10) }
let metrics = options.clientMetrics(target: target, methods: Orders_V1_OrderTracking.Method.descriptors)

func describe(_ snapshot: OrderSnapshot) -> String {
    var lines = [
        "order \(snapshot.orderID) (customer \(snapshot.customerID)): \(OrderViewState.text(for: snapshot.status))"
            + (snapshot.etaDisplay.isEmpty ? "" : ", ETA \(snapshot.etaDisplay)")
    ]
    if snapshot.hasCourier { lines.append("  courier at \(snapshot.courier.latitude), \(snapshot.courier.longitude)") }
    for event in snapshot.timeline { lines.append("  • \(event.title)" + (event.subtitle.isEmpty ? "" : " — \(event.subtitle)")) }
    lines.append("  latest update \(snapshot.latestUpdateID)")
    return lines.joined(separator: "\n")
}

@Sendable func describe(_ update: OrderUpdate) -> String {
    switch update.event {
    case .statusChanged(let change): "status: \(OrderViewState.text(for: change.status))"
    case .etaChanged(let change): "ETA: \(change.etaDisplay)"
    case .courierMoved(let move): "courier at \(move.latitude), \(move.longitude)"
    case .timelineEvent(let event): "• \(event.title)" + (event.subtitle.isEmpty ? "" : " — \(event.subtitle)")
    case nil: "(position)"
    }
}

func event(from words: ArraySlice<String>) -> Orders_V1_PublishUpdateRequest.OneOf_Event? {
    guard let kind = words.first else { return nil }
    let rest = Array(words.dropFirst())
    switch kind {
    case "status":
        let names: [String: OrderStatus] = [
            "received": .received, "preparing": .preparing, "out-for-delivery": .outForDelivery,
            "delivered": .delivered, "canceled": .canceled,
        ]
        guard rest.count == 1, let status = names[rest[0]] else { return nil }
        return .statusChanged(.with { $0.status = status })
    case "eta":
        guard !rest.isEmpty else { return nil }
        return .etaChanged(.with { $0.etaDisplay = rest.joined(separator: " ") })
    case "courier":
        guard rest.count == 2, let latitude = Double(rest[0]), let longitude = Double(rest[1]) else { return nil }
        return .courierMoved(
            .with {
                $0.latitude = latitude
                $0.longitude = longitude
            })
    case "timeline":
        guard (1...2).contains(rest.count) else { return nil }
        return .timelineEvent(
            .with {
                $0.title = rest[0]
                $0.subtitle = rest.count == 2 ? rest[1] : ""
            })
    default:
        return nil
    }
}

/// Watches until interrupted (or `count` updates): state changes on standard error, the order
/// and its updates on standard output.
func watch(_ orderID: String, count: Int?, client: GRPCClient<HTTP2ClientTransport>) async -> FeedConnectionState {
    var settings = OrderStreamStore<HTTP2ClientTransport>.Settings()
    settings.backoff = ReconnectBackoff(initial: .milliseconds(250), maximum: .seconds(5))
    let (done, finish) = AsyncStream.makeStream(of: Void.self)
    let applied = Counter()
    let store = OrderStreamStore(orderID: orderID, client: client, settings: settings) { change in
        switch change {
        case .bootstrapped(let order, let latest):
            say(
                "order \(order.id): \(order.statusText)" + (order.etaText.isEmpty ? "" : ", ETA \(order.etaText)")
                    + (order.courier.map { ", courier at \($0.latitude), \($0.longitude)" } ?? "") + "  (at \(latest))")
        case .applied(let update, _):
            guard update.event != nil else { return }
            say("\(update.updateID)  \(describe(update))")
            if let count, applied.increment() >= count { finish.yield() }
        case .connection(let state):
            FileHandle.standardError.write(Data("orders: \(state)\n".utf8))
        }
    }
    let signals = onTerminationSignals { _ in finish.yield() }
    defer { signals.cancel() }
    // Runs until `count` updates, a signal, or the store gives up.
    let running = Task {
        await store.run()
        finish.yield()
    }
    for await _ in done { break }
    running.cancel()
    await running.value
    return store.connectionState
}

/// Counts across the store's callbacks.
final class Counter: Sendable {
    private let value = Atomic(0)
    func increment() -> Int { value.add(1, ordering: .relaxed).newValue }
}

do {
    let positional = options.positional
    let state: FeedConnectionState? = try await withGRPCClient(
        transport: transport, interceptors: [BearerTokenClientInterceptor(token: token)], observer: metrics
    ) { client -> FeedConnectionState? in
        let orders = Orders_V1_OrderTracking.Client(wrapping: client)
        switch positional.first {
        case "create":
            let snapshot = try await orders.createOrder(
                .with {
                    $0.orderID = options["id"] ?? ""
                    $0.customerID = options["customer"] ?? ""
                    $0.etaDisplay = options["eta"] ?? ""
                }, options: callOptions)
            say(describe(snapshot))
        case "get":
            guard positional.count == 2 else { fail(usage, status: 2) }
            say(describe(try await orders.getOrder(.with { $0.orderID = positional[1] }, options: callOptions)))
        case "publish":
            guard positional.count >= 3, let event = event(from: positional[2...]) else { fail(usage, status: 2) }
            let update = try await orders.publishUpdate(
                .with {
                    $0.orderID = positional[1]
                    $0.event = event
                }, options: callOptions)
            say("\(update.updateID)  \(describe(update))")
        case "watch":
            guard positional.count == 2 else { fail(usage, status: 2) }
            let count = options["count"] == nil ? nil : try options.integer("count", default: 0)
            return await watch(positional[1], count: count, client: client)
        default:
            fail(usage, status: 2)
        }
        return nil
    }
    options.writeClientMetrics(metrics)
    if case .failed(let message)? = state { fail(message) }
} catch let error as RPCError {
    options.writeClientMetrics(metrics)
    fail("\(error.code): \(error.message)")
} catch {
    options.writeClientMetrics(metrics)
    fail("\(error)")
}
