// Pitlane's streaming benchmark client: `pitlane-bench-client --port N --seconds S`.
// Prints JSON lines: server-streaming messages/s on one stream, ping-pong round trips/s.
import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

var port = 0
var seconds = 5.0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let flag = arguments.next() {
    let value = arguments.next() ?? ""
    switch flag {
    case "--port": port = Int(value) ?? 0
    case "--seconds": seconds = Double(value) ?? seconds
    default: fatalError("unknown flag \(flag)")
    }
}
let body = [UInt8](repeating: 0x42, count: 16)
let clock = ContinuousClock()
let duration = Duration.milliseconds(Int(seconds * 1000))

try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
    let bench = Bench_V1_Bench.Client(wrapping: client)
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
