// The order tracker's load driver for `make bench`:
//   orders-load --port N [--watchers 1000] [--connections 10] [--updates 200] [--rate 50]
//               [--publishers 8] [--seconds 3] [--token staff-token] [--orders M --server-pid P]
// 1. publish→deliver latency: `watchers` WatchOrder streams on one order (over `connections`
//    HTTP/2 connections); one publisher sends `updates` updates at `rate` per second, each
//    carrying its send time; every watcher records now − send time for every update. p50, p99
//    and max over all deliveries.
// 2. durable updates per second: `publishers` concurrent publishers (one order each, and then
//    all on one order) publish as fast as acknowledgements come back for `seconds`.
//
// With --orders M (fan-out, instead of both): `watchers` WatchOrder streams spread over M
// orders (watcher i follows order i mod M), opened and warmed up (one update per order, every
// watcher sees its own); the server's RSS before and after (--server-pid) gives the memory per
// watcher; then `updates` updates at `rate` per second, to the orders in turn, and
// publish→deliver p50/p99 over every delivery. Prints one JSON line.
import Glibc
import Orders
import PitlaneCommandLine
import PitlaneCore
import PitlaneHTTP2
import Synchronization

let usage =
    "usage: orders-load --port N [--watchers 1000] [--connections 10] [--updates 200] [--rate 50] [--publishers 8] "
    + "[--seconds 3] [--token staff-token] [--orders M --server-pid P]"
let options = try CommandLineOptions(
    Array(CommandLine.arguments.dropFirst()), usage: usage,
    valueOptions: [
        "port", "watchers", "connections", "updates", "rate", "publishers", "seconds", "token", "orders", "server-pid",
    ])
let port = try options.integer("port", default: 8090)
let watcherCount = try options.integer("watchers", default: 1_000)
let connectionCount = max(1, try options.integer("connections", default: 10))
let updateCount = try options.integer("updates", default: 200)
let rate = try options.number("rate", default: 50)
let publisherCount = try options.integer("publishers", default: 8)
let seconds = try options.number("seconds", default: 3)
let token = options["token"] ?? "staff-token"
let orderCount = max(1, try options.integer("orders", default: 1))
let serverPID = try options.integer("server-pid", default: 0)

func nowNanoseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

/// Latency samples in microseconds, one shard per connection.
final class Samples: Sendable {
    final class Shard: Sendable {
        let values = Mutex<[Int]>([])
    }

    private let shards: [Shard]
    let delivered = Atomic(0)
    let warmedUp = Atomic(0)

    init(shards: Int) { self.shards = (0..<shards).map { _ in Shard() } }

    func record(_ microseconds: Int, shard: Int) {
        shards[shard].values.withLock { $0.append(microseconds) }
        delivered.add(1, ordering: .relaxed)
    }

    var sorted: [Int] { shards.flatMap { $0.values.withLock { $0 } }.sorted() }
}

func percentile(_ sorted: [Int], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return Double(sorted[min(sorted.count - 1, Int(p * Double(sorted.count)))]) / 1_000
}

func format(_ value: Double, _ decimals: Int = 2) -> String {
    let scale = Double.pow10(decimals)
    return String(Double((value * scale).rounded()) / scale)
}

extension Double {
    static func pow10(_ n: Int) -> Double { (0..<n).reduce(1) { value, _ in value * 10 } }
}

func makeClient() throws -> GRPCClient<HTTP2ClientTransport> {
    GRPCClient(
        transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port)),
        interceptors: [BearerTokenClientInterceptor(token: token)])
}

let clients = try (0..<connectionCount).map { _ in try makeClient() }
let publisherClient = try makeClient()
let connections = (clients + [publisherClient]).map { client in Task { try await client.runConnections() } }
let publisher = Orders_V1_OrderTracking.Client(wrapping: publisherClient)
let run = UInt64.random(in: 0 ... .max) >> 20

/// Watches `orderID` from `since`: counts the warm-up, records each later update's delay.
func watch(
    _ orderID: String, since: String, on client: Orders_V1_OrderTracking.Client<HTTP2ClientTransport>, into samples: Samples, shard: Int
) async throws {
    try await client.watchOrder(
        .with {
            $0.orderID = orderID
            $0.sinceUpdateID = since
        }
    ) { response in
        for try await update in response.messages {
            guard case .timelineEvent(let event) = update.event else { continue }
            if event.title == "warmup" {
                samples.warmedUp.add(1, ordering: .relaxed)
            } else if let sent = Int(event.subtitle) {
                samples.record((nowNanoseconds() - sent) / 1_000, shard: shard)
            }
        }
    }
}

/// Publishes `updates` updates at `rate` per second, update i to `order(i)`.
func publishPaced(to order: (Int) -> String) async throws {
    let clock = ContinuousClock()
    var next = clock.now
    let interval = Duration.nanoseconds(Int(1e9 / rate))
    for index in 0..<updateCount {
        try await clock.sleep(until: next)
        next += interval
        try await publish("u\(index)", on: publisher, order: order(index))
    }
}

/// The server's resident memory in KiB (its /proc status), 0 without --server-pid.
func serverRSS() -> Int {
    guard serverPID > 0, let file = fopen("/proc/\(serverPID)/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmRSS:") { return Int(text.split(separator: " ")[1]) ?? 0 }
    }
    return 0
}

/// Runs `work` for 0..<count, `width` at a time.
func concurrently(_ count: Int, width: Int = 64, _ work: @escaping @Sendable (Int) async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<width {
            group.addTask { for index in stride(from: worker, to: count, by: width) { try await work(index) } }
        }
        try await group.waitForAll()
    }
}

if orderCount > 1 {
    let orderIDs = (0..<orderCount).map { "fan-\(run)-\($0)" }
    // Each watcher starts from its order's creation, so a warm-up published before it
    // subscribed still reaches it, from the log.
    let created = Mutex([String](repeating: "", count: orderCount))
    try await concurrently(orderCount) { index in
        let snapshot = try await publisher.createOrder(
            .with {
                $0.orderID = orderIDs[index]
                $0.customerID = "bench"
            })
        created.withLock { $0[index] = snapshot.latestUpdateID }
    }
    let startTokens = created.withLock { $0 }
    let rssBefore = serverRSS()
    let samples = Samples(shards: connectionCount)
    let watchers = (0..<watcherCount).map { index in
        Task {
            let shard = index % connectionCount
            let client = Orders_V1_OrderTracking.Client(wrapping: clients[shard])
            let order = index % orderCount
            try await watch(orderIDs[order], since: startTokens[order], on: client, into: samples, shard: shard)
        }
    }
    try await concurrently(orderCount) { index in try await publish("warmup", on: publisher, order: orderIDs[index]) }
    try await waitFor({ samples.warmedUp.load(ordering: .relaxed) }, watcherCount, timeout: .seconds(300))
    let rssAfter = serverRSS()
    try await publishPaced { orderIDs[$0 % orderCount] }
    // Order j has watcherCount / orderCount watchers, one more for the first watcherCount % orderCount.
    let expected = (0..<updateCount).reduce(0) { total, index in
        total + watcherCount / orderCount + (index % orderCount < watcherCount % orderCount ? 1 : 0)
    }
    try await waitFor({ samples.delivered.load(ordering: .relaxed) }, expected)
    let latencies = samples.sorted
    let kib = Double(rssAfter - rssBefore) / Double(watcherCount)
    print(
        "{\"watchers\": \(watcherCount), \"orders\": \(orderCount), \"updates\": \(updateCount), \"deliveries\": \(latencies.count), "
            + "\"p50_ms\": \(format(percentile(latencies, 0.5))), \"p99_ms\": \(format(percentile(latencies, 0.99))), "
            + "\"server_rss_kib\": \(rssAfter), \"kib_per_watcher\": \(format(kib))}")
    for watcher in watchers { watcher.cancel() }
    for client in clients + [publisherClient] { client.beginGracefulShutdown() }
    for connection in connections { _ = await connection.result }
    exit(0)
}

// 1. Latency.
let orderID = "bench-\(run)"
let start = try await publisher.createOrder(
    .with {
        $0.orderID = orderID
        $0.customerID = "bench"
    }
).latestUpdateID
let samples = Samples(shards: connectionCount)
let watchers = (0..<watcherCount).map { index in
    Task {
        let shard = index % connectionCount
        let client = Orders_V1_OrderTracking.Client(wrapping: clients[shard])
        try await watch(orderID, since: start, on: client, into: samples, shard: shard)
    }
}
func publish(_ title: String, on client: Orders_V1_OrderTracking.Client<HTTP2ClientTransport>, order: String) async throws {
    _ = try await client.publishUpdate(
        .with {
            $0.orderID = order
            $0.timelineEvent = .with {
                $0.title = title
                $0.subtitle = String(nowNanoseconds())
            }
        })
}

/// Waits (polling an in-process counter the watchers raise, with a deadline) for `target`.
func waitFor(_ counter: () -> Int, _ target: Int, timeout: Duration = .seconds(60)) async throws {
    let deadline = ContinuousClock.now + timeout
    while counter() < target {
        guard ContinuousClock.now < deadline else {
            throw RPCError(code: .deadlineExceeded, message: "\(counter()) of \(target) arrived")
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

try await publish("warmup", on: publisher, order: orderID)
try await waitFor({ samples.warmedUp.load(ordering: .relaxed) }, watcherCount)
try await publishPaced { _ in orderID }
try await waitFor({ samples.delivered.load(ordering: .relaxed) }, watcherCount * updateCount)
let latencies = samples.sorted
print(
    "publish→deliver, \(watcherCount) watchers of one order, \(updateCount) updates at \(format(rate, 0))/s "
        + "(\(latencies.count) deliveries): p50 \(format(percentile(latencies, 0.5))) ms, "
        + "p99 \(format(percentile(latencies, 0.99))) ms, max \(format(percentile(latencies, 1))) ms")
for watcher in watchers { watcher.cancel() }

// 2. Durable updates per second.
func throughput(orders: [String]) async throws -> Double {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
    let began = ContinuousClock.now
    let acknowledged = try await withThrowingTaskGroup(of: Int.self) { group in
        for index in 0..<publisherCount {
            group.addTask {
                let order = orders[index % orders.count]
                var count = 0
                while ContinuousClock.now < deadline {
                    try await publish("t\(count)", on: publisher, order: order)
                    count += 1
                }
                return count
            }
        }
        return try await group.reduce(0, +)
    }
    let elapsed = ContinuousClock.now - began
    let elapsedSeconds = elapsed / .seconds(1)
    return Double(acknowledged) / elapsedSeconds
}
var separateOrders: [String] = []
for index in 0..<publisherCount {
    let id = "bench-\(run)-\(index)"
    _ = try await publisher.createOrder(
        .with {
            $0.orderID = id
            $0.customerID = "bench"
        })
    separateOrders.append(id)
}
let separate = try await throughput(orders: separateOrders)
let shared = try await throughput(orders: [orderID])
print(
    "durable updates/s, \(publisherCount) concurrent publishers (acknowledged after commit): "
        + "\(Int(separate)) on \(publisherCount) orders, \(Int(shared)) on one order")

for client in clients + [publisherClient] { client.beginGracefulShutdown() }
for connection in connections { _ = await connection.result }
