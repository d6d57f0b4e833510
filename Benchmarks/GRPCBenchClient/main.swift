// Pitlane's streaming benchmark client: `pitlane-bench-client --port N --seconds S`.
// Prints JSON lines: server-streaming messages/s on one stream, ping-pong round trips/s.
import Glibc
import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

var port = 0
var seconds = 5.0
var idleStreams = 0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let flag = arguments.next() {
    let value = arguments.next() ?? ""
    switch flag {
    case "--port": port = Int(value) ?? 0
    case "--seconds": seconds = Double(value) ?? seconds
    // Open this many ping-pong streams, echo one message on each, then hold them open for
    // `seconds` after printing "streams open" (for measuring a server's memory per stream).
    case "--idle-streams": idleStreams = Int(value) ?? 0
    default: fatalError("unknown flag \(flag)")
    }
}
let body = [UInt8](repeating: 0x42, count: 16)
let clock = ContinuousClock()
let duration = Duration.milliseconds(Int(seconds * 1000))

try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
    let bench = Bench_V1_Bench.Client(wrapping: client)
    if idleStreams > 0 {
        try await holdIdleStreams(bench, count: idleStreams)
        return
    }
    // Server streaming: one stream of (practically) endless messages, counted for `seconds`.
    let streamed = try await bench.serverStream(.with { $0.body = body; $0.seq = Int64.max }) { response in
        var count = 0
        let end = clock.now + duration
        for try await _ in response.messages {
            count += 1
            if count % 1000 == 0, clock.now >= end { break }
        }
        return count
    }
    print(#"{"impl": "pitlane", "case": "server-stream", "per_s": \#(Double(streamed) / seconds)}"#)

    // Ping-pong: one message in flight at a time on one stream.
    let (pings, answers) = AsyncStream.makeStream(of: Void.self)
    let roundTrips = try await bench.pingPong { writer in
        for await _ in pings { try await writer.write(.with { $0.body = body }) }
    } onResponse: { response in
        var count = 0
        let end = clock.now + duration
        answers.yield()
        for try await _ in response.messages {
            count += 1
            if clock.now >= end { break }
            answers.yield()
        }
        answers.finish()
        return count
    }
    print(#"{"impl": "pitlane", "case": "ping-pong", "per_s": \#(Double(roundTrips) / seconds)}"#)
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
        print(#"{"impl": "pitlane", "case": "streams open", "count": \#(count)}"#)
        fflush(nil)
        try await Task.sleep(for: duration)
        release.cancel()
        try await group.waitForAll()
    }
}
