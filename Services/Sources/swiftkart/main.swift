// swiftkart: the SwiftKart command-line client.
//   swiftkart races [--limit N]          the schedule, as a table
//   swiftkart follow "Duck Pond Dash"    a live race: track map, and the leaderboard on `l`
import Foundation
import Pitlane
import PitlaneCommandLine
import PitlaneObservability
import SwiftKart
import Synchronization

let usage = """
    usage: swiftkart races [--limit N]
           swiftkart follow RACE [--seconds N] [--plain]
    options: --host 127.0.0.1 --port 8080 | --unix PATH
             --tls [--ca ca.pem] [--server-name NAME]   TLS, verifying the server against ca.pem (or the system roots)
             --otlp-endpoint HOST:PORT                 spans of the calls to an OpenTelemetry collector (OTLP/gRPC)
             --otlp-message-events                     and in each span, an event per message sent and received
             --client-metrics PATH                     the calls' gRPC client metrics, Prometheus text, written at exit
    """

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("swiftkart: \(message)\n".utf8))
    exit(status)
}

let options: CommandLineOptions
do {
    options = try CommandLineOptions(
        Array(CommandLine.arguments.dropFirst()), usage: usage,
        valueOptions: CommandLineOptions.transportOptions.union(["limit", "seconds", "otlp-endpoint"])
            .union(CommandLineOptions.clientMetricsOptions),
        flagOptions: CommandLineOptions.transportFlags.union(["plain"]).union(CommandLineOptions.tracingFlags))
} catch {
    fail("\(error)\n\(usage)", status: 2)
}

let target: HTTP2ClientTransport.Target
do {
    target = try options.clientTarget(defaultPort: 8080)
} catch {
    fail("\(error)\n\(usage)", status: 2)
}
let security = options.clientSecurity()
let spans = options.spanExporter(serviceName: "swiftkart")
let metrics = options.clientMetrics(target: target, methods: SwiftKartService.Method.descriptors)
let manager = ClientManager(interceptors: options.tracingClientInterceptors(spans), observer: metrics) {
    try HTTP2ClientTransport(target: target, security: security)
}
let callOptions = CallOptions.defaults.with {
    $0.timeout = .seconds(10)
    $0.waitForReady = true
}

/// The schedule as a table.
func listRaces(limit: Int32) async throws {
    let races = try await manager.withClient { client in
        try await SwiftKartService.Client(wrapping: client)
            .listRaces(.with { $0.limit = limit }, options: callOptions).races
    }
    let formatter = DateFormatter()
    formatter.dateFormat = "yyyy-MM-dd HH:mm"
    formatter.timeZone = TimeZone(identifier: "UTC")
    func column(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
    print(column("START (UTC)", 18) + column("RACE", 24) + column("LOCATION", 34) + column("CHAMPIONSHIP", 26) + "LAPS  DRIVERS")
    for race in races {
        print(
            column(formatter.string(from: race.startTime.date), 18) + column(race.name, 24) + column(race.location, 34)
                + column(race.championship, 26) + column(String(race.laps), 6) + String(race.drivers.count))
    }
    print("\(races.count) races")
}

/// Follows a race: on a terminal, a live map with the leaderboard toggled by `l` (which changes
/// the subscription on the open stream); otherwise (or with --plain) a line per standings update.
func follow(raceName: String, seconds: Int?, plain: Bool) async throws {
    let schedule = try await manager.withClient { client in
        try await SwiftKartService.Client(wrapping: client).listRaces(.with { $0.limit = RaceDB.maximumLimit }, options: callOptions).races
    }
    guard let race = schedule.first(where: { $0.name == raceName }) else { fail("no race named '\(raceName)'") }
    let interactive = !plain && Terminal.isInteractive
    let terminal = Terminal()
    let view = Locked(LiveRaceView(race: race, showLeaderboard: !interactive))

    // Each value is the leaderboard's visibility; each becomes a request on the open stream.
    let (subscriptions, subscription) = AsyncStream.makeStream(of: Bool.self)
    let stoppedByUser = Locked(false)
    subscription.yield(!interactive)
    if interactive {
        terminal.enterKeyMode()
        Task.detached {
            for await key in Terminal.keys() {
                switch key {
                case UInt8(ascii: "l"):
                    subscription.yield(
                        view.withLock {
                            $0.showLeaderboard.toggle()
                            return $0.showLeaderboard
                        })
                case UInt8(ascii: "q"):
                    stoppedByUser.withLock { $0 = true }
                    subscription.finish()
                default: break
                }
            }
        }
    }
    if let seconds {
        Task.detached {
            try? await Task.sleep(for: .seconds(seconds))
            stoppedByUser.withLock { $0 = true }
            subscription.finish()  // half-close: the server ends the RPC
        }
    }
    defer { terminal.restore() }

    try await manager.withClient { client in
        try await SwiftKartService.Client(wrapping: client).followRace { requests in
            for await showLeaderboard in subscriptions {
                try await requests.write(
                    .with {
                        $0.raceName = race.name
                        $0.eventTypes = showLeaderboard ? [.kartLocations, .standings] : [.kartLocations]
                    })
            }
        } onResponse: { response in
            var lastDrawn = ContinuousClock.now - .seconds(1)
            for try await message in response.messages {
                guard let event = message.event else { continue }
                let screen: String? = view.withLock { view in
                    view.apply(event)
                    if interactive {
                        return ContinuousClock.now - lastDrawn >= .milliseconds(100) ? view.render() : nil
                    }
                    if case .standings = event { return view.leaderboard().joined(separator: "\n") + "\n" }
                    return nil
                }
                guard let screen else { continue }
                if interactive {
                    terminal.draw(screen)
                    lastDrawn = .now
                } else {
                    terminal.write(screen + "\n")
                }
            }
        }
    }
    terminal.restore()
    print(stoppedByUser.withLock { $0 } ? "stopped following \(race.name)" : "\(race.name) is over")
}

/// A value shared between the key reader and the response loop.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

do {
    try await options.exportingSpans(spans) {
        switch options.positional.first {
        case "races":
            try await listRaces(limit: Int32(clamping: try options.integer("limit", default: 0)))
        case "follow":
            guard options.positional.count == 2 else { fail("follow needs exactly one race name\n\(usage)", status: 2) }
            let seconds = options["seconds"] == nil ? nil : try options.integer("seconds", default: 0)
            try await follow(raceName: options.positional[1], seconds: seconds, plain: options.has("plain"))
        default:
            fail(usage, status: 2)
        }
        await manager.disconnect()
    }
    options.writeClientMetrics(metrics)
} catch let error as RPCError {
    options.writeClientMetrics(metrics)
    fail("\(error.code): \(error.message)")
} catch {
    options.writeClientMetrics(metrics)
    fail("\(error)")
}
