// The SwiftKart follower load driver for `make bench`:
//   swiftkart-load --port N --server-pid P --steps 1000,2500,5000,10000 [--connections 10] [--seconds 3]
//                  [--calls-off-loop]
// Adds followers of one race step by step (all on one race, spread over `connections` HTTP/2
// connections) and after each step measures, for `seconds`: the delay from each locations
// event's `recorded_at` to its arrival (p50, p99), messages per second, and the server's RSS.
// Prints one JSON line per step. --calls-off-loop runs the followers' tasks on the global pool
// rather than on their connections' event loops (HTTP2ClientTransport's default), to compare.
import Glibc
import PitlaneCommandLine
import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf
import SwiftKart
import Synchronization

let usage =
    "usage: swiftkart-load --port N --server-pid P [--steps 1000,2500,5000,10000] [--connections 10] [--seconds 3] "
    + "[--race NAME] [--calls-off-loop]"

/// An option's value, or the usage and exit status 2 when the command line is wrong.
func parsed<T>(_ read: () throws -> T) -> T {
    do {
        return try read()
    } catch {
        let message = "swiftkart-load: \(error)\n\(usage)\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
}

let options = parsed {
    try CommandLineOptions(
        Array(CommandLine.arguments.dropFirst()), usage: usage,
        valueOptions: ["port", "server-pid", "steps", "connections", "seconds", "race"],
        flagOptions: ["calls-off-loop"])
}
let port = parsed { try options.integer("port", default: 8080) }
let serverPID = parsed { try options.integer("server-pid", default: 0) }
let steps = (options["steps"] ?? "1000,2500,5000,10000").split(separator: ",").compactMap { Int($0) }
let connectionCount = parsed { try options.integer("connections", default: 10) }
let window = Duration.milliseconds(Int(parsed { try options.number("seconds", default: 3) } * 1000))
let raceName = options["race"] ?? "Zuera Finale"

/// Delays in milliseconds, bucketed by whole millisecond (the last bucket holds ≥ 2 s).
final class Histogram: Sendable {
    final class Shard: Sendable {
        let buckets = Mutex([Int](repeating: 0, count: 2_001))
    }

    private let shards = (0..<16).map { _ in Shard() }
    let measuring = Atomic(false)
    let firstEvents = Atomic(0)

    func record(_ milliseconds: Int, shard: Int) {
        guard measuring.load(ordering: .relaxed) else { return }
        shards[shard % shards.count].buckets.withLock { $0[min(max(milliseconds, 0), 2_000)] += 1 }
    }

    /// Clears the buckets and starts counting.
    func start() {
        for shard in shards { shard.buckets.withLock { $0 = [Int](repeating: 0, count: 2_001) } }
        measuring.store(true, ordering: .relaxed)
    }

    /// Stops counting; returns (count, p50, p99).
    func stop() -> (count: Int, p50: Int, p99: Int) {
        measuring.store(false, ordering: .relaxed)
        var merged = [Int](repeating: 0, count: 2_001)
        for shard in shards { shard.buckets.withLock { for index in merged.indices { merged[index] += $0[index] } } }
        let total = merged.reduce(0, +)
        func percentile(_ p: Double) -> Int {
            var seen = 0
            for (milliseconds, count) in merged.enumerated() {
                seen += count
                if Double(seen) >= p * Double(total) { return milliseconds }
            }
            return 2_000
        }
        return (total, percentile(0.5), percentile(0.99))
    }
}

func nowMilliseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return time.tv_sec * 1_000 + time.tv_nsec / 1_000_000
}

func residentKiB(of pid: Int) -> Int {
    guard pid > 0, let file = fopen("/proc/\(pid)/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, 256, file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmRSS:") { return Int(text.split(separator: " ")[1]) ?? 0 }
    }
    return 0
}

/// CPU seconds a process has used (user + system), from /proc/PID/stat.
func cpuSeconds(of pid: Int32) -> Double {
    guard let file = fopen("/proc/\(pid)/stat", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 1024)
    guard fgets(&line, 1024, file) != nil else { return 0 }
    let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let fields = text[text.index(after: text.lastIndex(of: ")")!)...].split(separator: " ")
    return (Double(fields[11]) ?? 0) / 100 + (Double(fields[12]) ?? 0) / 100
}

let histogram = Histogram()
let clients = try (0..<connectionCount).map { _ in
    var config = HTTP2ClientTransport.Config.defaults
    config.runsCallsOnEventLoop = !options.has("calls-off-loop")
    return GRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port), config: config))
}

try await withThrowingTaskGroup(of: Void.self) { group in
    for client in clients { group.addTask { try await client.runConnections() } }
    let (stop, stopAll) = AsyncStream.makeStream(of: Never.self)
    let baselineKiB = residentKiB(of: serverPID)
    var started = 0
    for target in steps {
        while started < target {
            let index = started
            let kart = SwiftKartService.Client(wrapping: clients[index % clients.count])
            group.addTask {
                try await kart.followRace { writer in
                    try await writer.write(
                        .with {
                            $0.raceName = raceName
                            $0.eventTypes = [.kartLocations]
                        })
                    for await _ in stop {}
                } onResponse: { response in
                    var first = true
                    for try await message in response.messages {
                        guard case .locations(let locations)? = message.event, let kart = locations.karts.first else { continue }
                        if first {
                            first = false
                            histogram.firstEvents.add(1, ordering: .relaxed)
                        }
                        let recorded = Int(kart.recordedAt.seconds) * 1_000 + Int(kart.recordedAt.nanos) / 1_000_000
                        histogram.record(nowMilliseconds() - recorded, shard: index)
                    }
                }
            }
            started += 1
        }
        while histogram.firstEvents.load(ordering: .relaxed) < target {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .seconds(1))  // let the ramp settle
        let cpuBefore = (server: cpuSeconds(of: Int32(serverPID)), load: cpuSeconds(of: getpid()))
        let windowStart = ContinuousClock.now
        histogram.start()
        try await Task.sleep(for: window)
        let (count, p50, p99) = histogram.stop()
        let rssKiB = residentKiB(of: serverPID)
        let serverCPU = (cpuSeconds(of: Int32(serverPID)) - cpuBefore.server)
        let loadCPU = (cpuSeconds(of: getpid()) - cpuBefore.load)
        let perFollower = Double(rssKiB - baselineKiB) / Double(target)
        // The window as it really was: an overloaded driver wakes late.
        let elapsed = ContinuousClock.now - windowStart
        let seconds = elapsed / .seconds(1)
        let line =
            #"{"followers": \#(target), "p50_ms": \#(p50), "p99_ms": \#(p99), "messages_per_s": \#(Int(Double(count) / seconds)), "server_rss_kib": \#(rssKiB), "kib_per_follower": \#((perFollower * 10).rounded() / 10), "server_cpu": \#((serverCPU / seconds * 100).rounded() / 100), "load_cpu": \#((loadCPU / seconds * 100).rounded() / 100)}"#
            + "\n"
        _ = line.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
    }
    stopAll.finish()
    for client in clients { client.beginGracefulShutdown() }
    try await group.waitForAll()
}
