// swiftkart-server: the SwiftKart service and the standard health service on one port.
import Foundation
import Pitlane
import PitlaneCommandLine
import PitlaneHealth
import PitlaneObservability
import PitlaneReflection
import SwiftKart
import WebApp

let usage = """
    usage: swiftkart-server [--host 127.0.0.1] [--port 8080] [--unix PATH] [--database data/swiftkart.sqlite | postgresql://...]
                            [--tls-cert server.pem --tls-key server.key] [--speed 1] [--seed 0] [--max-streams 100] [--min-ping-interval 300]
                            [--cors-origins https://app.example,...] [--web-root DIR] [--log-format json|logfmt] [--drain-delay 0]
                            [--otlp-endpoint HOST:PORT [--otlp-message-events]]
      The web app (schedule, live race map) is at http://HOST:PORT/races.html.
      With a PostgreSQL --database, replicas share the schedule and run each live race once
      between them: one leads it, the others mirror its ticks and take over if it stops.
    """

func log(_ message: String) {
    FileHandle.standardError.write(Data("swiftkart-server: \(message)\n".utf8))
}

do {
    let options = try CommandLineOptions(
        Array(CommandLine.arguments.dropFirst()), usage: usage,
        valueOptions: CommandLineOptions.transportOptions.union(CommandLineOptions.operatorOptions)
            .union(CommandLineOptions.databaseOptions).union(["speed", "seed", "max-streams", "web-root"]),
        flagOptions: CommandLineOptions.tracingFlags)
    let (store, databaseName) = try options.database(defaultPath: "data/swiftkart.sqlite")
    let database = try RaceDB(database: store)

    var settings = RaceTracker.Settings()
    settings.speed = try options.number("speed", default: 1)
    settings.seed = UInt64(try options.integer("seed", default: 0))
    // Replicas on one PostgreSQL database run each race once between them.
    settings.coordinator = try RaceCoordinator(database: store)
    defer { settings.coordinator?.stop() }
    let tracker = RaceTracker(settings: settings)
    let health = HealthService()

    let address = try options.serverAddress(defaultPort: 8080)
    var config = HTTP2ServerTransport.Config.defaults
    var web = WebConfig()
    web.cors = options.corsPolicy()
    config.http2.minimumPingInterval = try options.minimumPingInterval(default: 300)
    config.http2.maxConcurrentStreams = try options.integer("max-streams", default: config.http2.maxConcurrentStreams)
    // The web app (schedule and live race map) on the same port: http://HOST:PORT/races.html.
    web.staticFiles = try WebApp.files(root: options["web-root"])
    config.web = web
    if web.staticFiles == nil {
        log("no web app beside the executable (\(WebApp.bundleName)) and no --web-root; serving RPCs only")
    }
    let security = try options.serverSecurity()
    let reflection = try ReflectionService(services: [
        (SwiftKartService.descriptor, SwiftKartService.fileDescriptorProtos),
        (Grpc_Health_V1_Health.descriptor, Grpc_Health_V1_Health.fileDescriptorProtos),
    ])
    let services: [any RegistrableRPCService] = [RaceService(database: database, tracker: tracker), health, reflection]
    let metrics = ServerMetrics(services: services)
    config.addOperatorEndpoints(metrics: metrics, health: health)
    let spans = options.spanExporter(serviceName: "swiftkart-server")
    let server = GRPCServer(
        transport: .http2(address: address, security: security, config: config),
        services: services, interceptors: try options.accessLog() + options.tracingServerInterceptors(spans),
        observer: metrics)
    metrics.observe(server.transport)
    metrics.addGauge("swiftkart_live_races", help: "Race simulations running.") { tracker.counts.races }
    metrics.addGauge("swiftkart_race_followers", help: "Followers of live races (FollowRace and WatchRace streams).") {
        tracker.counts.followers
    }

    let races = try database.raceCount()
    // SIGINT and SIGTERM: report NOT_SERVING, end the live races, send GOAWAY and drain.
    let drainDelay = try options.drainDelay()
    // With --otlp-endpoint, spans go to the collector while the server runs, the last ones after.
    try await options.exportingSpans(spans) {
        try await serveUntilTerminated(
            server, health: health, services: [SwiftKartService.descriptor], drainDelay: drainDelay, log: log,
            beforeDrain: { tracker.shutdown() },
            describe: { [tls = options["tls-cert"] == nil ? "" : " with TLS", speed = settings.speed] listening in
                "listening on \(listening)\(tls); database \(databaseName) with \(races) races; race speed ×\(speed)"
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
