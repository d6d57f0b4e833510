// orders-server: the live order tracker (orders.v1.OrderTracking), the chat rooms
// (chat.v1.ChatRoom) and the health service on one port, on one SQLite file or on a
// PostgreSQL database shared with other replicas.
import Foundation
import LiveChat
import Orders
import Pitlane
import PitlaneCommandLine
import PitlaneHealth
import PitlaneLive
import PitlaneObservability
import PitlaneReflection
import PitlaneSQL
import WebApp

let usage = """
    usage: orders-server [--host 127.0.0.1] [--port 8090] [--unix PATH]
                         [--database data/orders.sqlite | postgresql://...] [--db-connections 16] [--db-statement-timeout 5000]
                         [--tokens TOKEN=USER,...] [--staff USER,...]
                         [--retain-updates 10000] [--retain-seconds 604800] [--watch-buffer 1024]
                         [--durability full|normal] [--chat-history 50] [--chat-backlog 256] [--max-streams 1000]
                         [--min-ping-interval 5] [--ws-max-message 65536]
                         [--cors-origins https://app.example,...] [--web-root DIR] [--log-format json|logfmt] [--drain-delay 0]
                         [--otlp-endpoint HOST:PORT [--otlp-message-events]]
      The web app is at http://HOST:PORT/; the seed's WebSocket chat at ws://HOST:PORT/ (room
      "lobby") and ws://HOST:PORT/rooms/ROOM, sharing the rooms with gRPC chat clients.
      Order tracker calls need `authorization: Bearer TOKEN`; a user reaches their own orders,
      staff reach every order. Default tokens: alice-token=alice,bob-token=bob,staff-token=staff.
      With a PostgreSQL --database, any number of replicas share orders, resume tokens and chat
      rooms; health is NOT_SERVING while the database is unreachable.
    """

func log(_ message: String) {
    FileHandle.standardError.write(Data("orders-server: \(message)\n".utf8))
}

do {
    let options = try CommandLineOptions(
        Array(CommandLine.arguments.dropFirst()), usage: usage,
        valueOptions: CommandLineOptions.transportOptions.union(CommandLineOptions.operatorOptions)
            .union(CommandLineOptions.databaseOptions).union([
                "tokens", "staff", "retain-updates", "retain-seconds",
                "watch-buffer", "durability", "chat-history", "chat-backlog", "max-streams", "ws-max-message", "web-root",
            ]),
        flagOptions: CommandLineOptions.tracingFlags)
    let retention = OrderLog.Retention(
        maxUpdatesPerOrder: max(1, try options.integer("retain-updates", default: 10_000)),
        maxAge: .seconds(max(1, try options.integer("retain-seconds", default: 7 * 24 * 3600))))
    guard let durability = OrderLog.Durability(rawValue: options["durability"] ?? "full") else {
        throw CommandLineOptions.UsageError(description: "--durability is full or normal")
    }
    let (database, databaseName) = try options.database(defaultPath: "data/orders.sqlite", synchronous: durability.rawValue.uppercased())
    let orderLog = try OrderLog(
        database: database, retention: retention, watchBuffer: max(1, try options.integer("watch-buffer", default: 1_024)))
    let access: OrderAccess
    do {
        access = try OrderAccess(
            tokens: options["tokens"] ?? "alice-token=alice,bob-token=bob,staff-token=staff",
            staff: options["staff"] ?? "staff")
    } catch let error as RPCError {
        throw CommandLineOptions.UsageError(description: "--tokens: \(error.message)")
    }
    var chatSettings = ChatRooms.Settings()
    chatSettings.history = max(0, try options.integer("chat-history", default: chatSettings.history))
    chatSettings.backlog = max(1, try options.integer("chat-backlog", default: chatSettings.backlog))
    let rooms = try ChatRooms(database: database, settings: chatSettings)
    let health = HealthService()
    // Replicas on one PostgreSQL database: the others' commits wake this one's watchers and rooms.
    let relays = [
        orderLog.feed.relay(onChange: { reachable in
            health.setDependency("database", reachable: reachable)
            if !reachable { log("lost the database's notifications; reconnecting") }
        }),
        rooms.relay(),
    ].compactMap { $0 }
    defer { relays.forEach { $0.stop() } }

    let address = try options.serverAddress(defaultPort: 8090)
    var config = HTTP2ServerTransport.Config.defaults
    var web = WebConfig()
    web.cors = options.corsPolicy()
    config.http2.maxConcurrentStreams = try options.integer("max-streams", default: 1_000)
    // Watchers and chatters hold streams open for long and ping to keep them honest.
    config.http2.minimumPingInterval = try options.minimumPingInterval(default: 5)
    // The seed's WebSocket chat clients share the rooms, and the web app is served, on the same port.
    var webSocketLimits = WebSocketLimits()
    webSocketLimits.maxMessageBytes = max(125, try options.integer("ws-max-message", default: webSocketLimits.maxMessageBytes))
    web.webSocket = SeedChatEndpoint.endpoint(rooms: rooms, limits: webSocketLimits)
    web.staticFiles = try WebApp.files(root: options["web-root"])
    config.web = web
    if web.staticFiles == nil {
        log("no web app beside the executable (\(WebApp.bundleName)) and no --web-root; serving RPCs only")
    }
    let reflection = try ReflectionService(services: [
        (Orders_V1_OrderTracking.descriptor, Orders_V1_OrderTracking.fileDescriptorProtos),
        (Chat_V1_ChatRoom.descriptor, Chat_V1_ChatRoom.fileDescriptorProtos),
        (Grpc_Health_V1_Health.descriptor, Grpc_Health_V1_Health.fileDescriptorProtos),
    ])
    // PublishUpdate's time to a durable commit handed to the watchers, next to the watchers gauge.
    let publishLatency = LatencyHistogram()
    let orderTracking = OrderTrackingService(log: orderLog, access: access) { publishLatency.record($0) }
    let services: [any RegistrableRPCService] = [orderTracking, ChatService(rooms: rooms), health, reflection]
    let metrics = ServerMetrics(services: services)
    config.addOperatorEndpoints(metrics: metrics, health: health)
    let spans = options.spanExporter(serviceName: "orders-server")
    let tracing = options.tracingServerInterceptors(spans)
    let server = GRPCServer(
        transport: .http2(address: address, security: try options.serverSecurity(), config: config),
        services: services, interceptors: try options.accessLog() + tracing + [access.interceptor()], observer: metrics)
    metrics.observe(server.transport)
    metrics.addGauge("orders_watchers", help: "WatchOrder and FollowOrder streams receiving live updates.") {
        orderLog.feed.subscribers.count
    }
    metrics.addHistogram(
        "orders_publish_latency_seconds",
        help: "Time from a PublishUpdate reaching its handler to its update committed and handed to the order's watchers.",
        publishLatency)
    metrics.addGauge("chat_rooms", help: "Chat rooms with someone in them.") { rooms.counts.rooms }
    metrics.addGauge("chat_participants", help: "Chat participants, gRPC and WebSocket.") { rooms.counts.participants }

    // SIGINT and SIGTERM: report NOT_SERVING, end the watches and chats (clients resume), drain.
    let drainDelay = try options.drainDelay()
    // With --otlp-endpoint, spans go to the collector while the server runs, the last ones after.
    try await options.exportingSpans(spans) {
        try await serveUntilTerminated(
            server, health: health, services: [Orders_V1_OrderTracking.descriptor, Chat_V1_ChatRoom.descriptor],
            drainDelay: drainDelay, log: log,
            beforeDrain: {
                orderLog.shutdown()
                rooms.shutdown()
            },
            describe: { listening in
                "listening on \(listening); database \(databaseName) (log epoch \(String(orderLog.epoch, radix: 16)), "
                    + "\(database.dialect == .sqlite ? "\(durability) durability, " : "")keeping \(retention.maxUpdatesPerOrder) updates per order)"
            })
    }
    log("stopped")
} catch let error as CommandLineOptions.UsageError {
    log("\(error)\n\(usage)")
    exit(2)
} catch {
    log("error: \(error)")
    exit(1)
}
