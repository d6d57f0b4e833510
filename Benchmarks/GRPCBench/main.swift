// Pitlane's benchmark server: `pitlane-bench-server [--port N]`; prints "listening PORT".
import Glibc
import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

struct BenchService: Bench_V1_Bench.SimpleServiceProtocol {
    func unary(request: Bench_V1_Payload, context: ServerContext) async throws -> Bench_V1_Payload {
        request
    }

    func serverStream(request: Bench_V1_Payload, response: RPCWriter<Bench_V1_Payload>, context: ServerContext) async throws {
        var message = request
        for seq in 0..<request.seq {
            message.seq = seq
            try await response.write(message)
        }
    }

    func pingPong(request: RPCAsyncSequence<Bench_V1_Payload, any Error>, response: RPCWriter<Bench_V1_Payload>,
                  context: ServerContext) async throws {
        for try await message in request { try await response.write(message) }
    }
}

var port = 0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
var maxStreams = 100
while let flag = arguments.next() {
    let value = arguments.next().flatMap(Int.init)
    if flag == "--port", let value { port = value }
    if flag == "--max-streams", let value { maxStreams = value }
}
var config = HTTP2ServerTransport.Config.defaults
config.eventLoopThreads = 1
config.maxConcurrentStreams = maxStreams
let transport = HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: port), config: config)
let server = GRPCServer(transport: transport, services: [BenchService()])
// The main thread only waits: an async main parks it in libdispatch's sigsuspend, which
// valgrind 3.19 (Debian 12) cannot follow, and scripts/bench-instructions runs this server
// under valgrind. Detached: top-level code is on the main actor, and the main thread waits.
Task.detached {
    do {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            let bound = try await server.listeningAddress
            print("listening \(bound.port ?? 0)")
            fflush(nil)  // flushes every output stream; the harness reads this line through a pipe
            try await group.waitForAll()
        }
        exit(0)
    } catch {
        print("pitlane-bench-server: \(error)")
        exit(1)
    }
}
while true { pause() }
