// Pitlane's gRPC benchmark client, driving any bench.v1.Bench server (Pitlane's, gRPC C++'s,
// grpcio's), so that one harness measures them all.
//
//   pitlane-bench-client --port N [--seconds S] [--label SERVER] [--body-size BYTES]
//       one server stream's messages/s, then one ping-pong stream's round trips/s with p50/p99
//   pitlane-bench-client --port N --unary-latency [--seconds S] [--label SERVER] [--body-size BYTES]
//       sequential unary calls, one in flight: calls/s with p50/p99
//   pitlane-bench-client --port N --idle-streams K [--seconds S]
//       opens K ping-pong streams, each answered once, prints "streams open", holds them S seconds
//
// Prints JSON lines whose "impl" is SERVER (default "pitlane"): the server measured, not this
// client; "bytes" is the messages' body size (default 16). Latencies are in microseconds.
// The first half second of every measurement is warm-up and is not counted.
import Glibc
import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

/// The command line; constants, so concurrent tasks may read them.
struct Options {
    var port = 0
    var seconds = 5.0
    var label = "pitlane"
    var idleStreams = 0
    var unaryLatency = false
    var bodySize = 16

    static func parse() -> Options {
        var options = Options()
        var arguments = CommandLine.arguments.dropFirst().makeIterator()
        while let flag = arguments.next() {
            if flag == "--unary-latency" {
                options.unaryLatency = true
                continue
            }
            if flag == "--help" || flag == "-h" {
                print(Options.usageText)
                exit(0)
            }
            let value = arguments.next() ?? ""
            switch flag {
            case "--port": options.port = Int(value) ?? 0
            case "--seconds": options.seconds = Double(value) ?? options.seconds
            case "--label": options.label = value
            case "--idle-streams": options.idleStreams = Int(value) ?? 0
            case "--body-size": options.bodySize = Int(value) ?? options.bodySize
            default: usage("unknown flag \(flag)")
            }
        }
        if options.port <= 0 { usage("--port N is required") }
        return options
    }

    /// Prints `problem` and the usage (the comment at the top of this file) and exits with 2.
    static func usage(_ problem: String) -> Never {
        var text = "pitlane-bench-client: \(problem)\n\(usageText)\n"
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        exit(2)
    }

    static let usageText = """
        usage: pitlane-bench-client --port N [--seconds S] [--label SERVER] [--body-size BYTES]
               [--unary-latency | --idle-streams K]
        """
}
let options = Options.parse()
let label = options.label
let body = [UInt8](repeating: 0x42, count: options.bodySize)
let clock = ContinuousClock()
let duration = Duration.milliseconds(Int(options.seconds * 1000))
let warmUp = Duration.milliseconds(500)

extension Duration {
    var microseconds: Double { self / .microseconds(1) }
}

/// Counts operations (and, when given, their latencies) once the warm-up is over, until
/// `duration` has passed; reports operations per second of measured time with p50 and p99.
struct Recorder {
    let start = clock.now
    var measuring: ContinuousClock.Instant? = nil
    var last: ContinuousClock.Instant? = nil
    var latencies: [Duration] = []
    var count = 0

    /// Records `operations` finished operations (with the latency of one, when measured);
    /// returns false once the measurement is over.
    mutating func record(_ operations: Int = 1, latency: Duration? = nil) -> Bool {
        let now = clock.now
        guard let since = measuring else {
            if now - start >= warmUp { measuring = now }
            return true
        }
        count += operations
        last = now
        if let latency { latencies.append(latency) }
        return now - since < duration
    }

    func report(_ caseName: String) {
        // Up to the last operation counted: ending the call afterwards is not measured.
        let elapsed = measuring.flatMap { since in last.map { $0 - since } } ?? .zero
        let rate = elapsed > .zero ? Double(count) / (elapsed.microseconds / 1e6) : 0
        var fields = [
            #""impl": "\#(label)""#, #""client": "pitlane""#, #""case": "\#(caseName)""#,
            #""bytes": \#(body.count)"#, #""per_s": \#(rate.rounded())"#,
        ]
        if !latencies.isEmpty {
            let sorted = latencies.sorted()
            // Nearest rank: the smallest latency at least `p` of the calls did not exceed.
            func percentile(_ p: Double) -> Double {
                let rank = Int((p * Double(sorted.count)).rounded(.up))
                return (sorted[max(rank, 1) - 1].microseconds * 10).rounded() / 10
            }
            fields += [#""p50_us": \#(percentile(0.50))"#, #""p99_us": \#(percentile(0.99))"#]
        }
        print("{" + fields.joined(separator: ", ") + "}")
        fflush(nil)
    }
}

// A failure (a reset stream, a server that went away) ends the run with its status and a
// line that says what happened, not a crash report.
do {
    try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: options.port))) { client in
        let bench = Bench_V1_Bench.Client(wrapping: client)
        if options.idleStreams > 0 {
            try await holdIdleStreams(bench, count: options.idleStreams)
        } else if options.unaryLatency {
            try await measureUnary(bench)
        } else {
            try await measureStreams(bench)
        }
    }
} catch {
    let line = Array("pitlane-bench-client: \(error)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}

/// Sequential unary calls on one connection, one in flight: the latency a lone caller sees.
func measureUnary(_ bench: Bench_V1_Bench.Client<HTTP2ClientTransport>) async throws {
    var recorder = Recorder()
    let request = Bench_V1_Payload.with { $0.body = body }
    var going = true
    while going {
        let sent = clock.now
        _ = try await bench.unary(request)
        going = recorder.record(latency: clock.now - sent)
    }
    recorder.report("unary sequential")
}

func measureStreams(_ bench: Bench_V1_Bench.Client<HTTP2ClientTransport>) async throws {
    // Server streaming: one stream of (practically) endless messages, counted until time is up;
    // the clock is read once per 1,000 messages to keep it out of the loop's cost.
    let streamed = try await bench.serverStream(
        .with {
            $0.body = body
            $0.seq = Int64.max
        }
    ) { response in
        var recorder = Recorder()
        var batch = 0
        for try await _ in response.messages {
            batch += 1
            if batch == 1000 {
                batch = 0
                guard recorder.record(1000) else { break }
            }
        }
        return recorder
    }
    streamed.report("server-stream")

    // Ping-pong: one message in flight at a time on one stream; a round trip is the time from
    // handing a message to the writer to reading its echo.
    // The first ping is queued before the call: a server may hold its response headers until
    // it has a message to answer (gRPC C++ does), so the client must not wait for them.
    let (pings, pinged) = AsyncStream.makeStream(of: Void.self)
    let firstSent = clock.now
    pinged.yield()
    let roundTrips = try await bench.pingPong { writer in
        for await _ in pings { try await writer.write(.with { $0.body = body }) }
    } onResponse: { response in
        var recorder = Recorder()
        var sent = firstSent  // the first round trip includes the call's setup, in the warm-up
        for try await _ in response.messages {
            guard recorder.record(latency: clock.now - sent) else { break }
            sent = clock.now
            pinged.yield()
        }
        pinged.finish()
        return recorder
    }
    roundTrips.report("ping-pong")
}

/// Opens `count` streams, each answered once, and keeps them open for `seconds`.
func holdIdleStreams(_ bench: Bench_V1_Bench.Client<HTTP2ClientTransport>, count: Int) async throws {
    let (opened, openedContinuation) = AsyncStream.makeStream(of: Void.self)
    let release = RPCCancellationHandle()  // raised to let every stream end
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<count {
            group.addTask {
                try await bench.pingPong { writer in
                    try await writer.write(.with { $0.body = body })
                    await release.wait()
                } onResponse: { response in
                    for try await _ in response.messages {
                        openedContinuation.yield()
                        await release.wait()
                        return
                    }
                }
            }
        }
        var ready = 0
        for await _ in opened {
            ready += 1
            if ready == count { break }
        }
        print(#"{"impl": "\#(label)", "case": "streams open", "count": \#(count)}"#)
        fflush(nil)
        try await Task.sleep(for: duration)
        release.cancel()
        try await group.waitForAll()
    }
}
