// Pitlane's benchmark server: `pitlane-bench-server [--port N] [--max-streams N] [--metrics]
// [--otlp-endpoint HOST:PORT]`; prints "listening PORT".
//   --metrics                  ServerMetrics counts every call and /metrics serves them, as on
//                              the project's servers (the cost of metrics, beside none)
//   --otlp-endpoint HOST:PORT  a server span per call (every call: Pitlane samples all), exported
//                              in batches to that collector (the cost of tracing, beside none)
//   --pass-through-interceptor  one interceptor that only calls the next (what an interceptor
//                              costs, beside none)
import Glibc
import PitlaneCore
import PitlaneHTTP2
import PitlaneObservability
import PitlaneProtobuf
import PitlaneWeb

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

    func pingPong(
        request: RPCAsyncSequence<Bench_V1_Payload, any Error>, response: RPCWriter<Bench_V1_Payload>,
        context: ServerContext
    ) async throws {
        for try await message in request { try await response.write(message) }
    }
}

/// Only calls the next: what an interceptor costs a call by being there.
struct PassThroughInterceptor: ServerInterceptor {
    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        try await next(request, context)
    }
}

let usage = "usage: pitlane-bench-server [--port N] [--max-streams N] [--metrics] [--otlp-endpoint HOST:PORT] [--pass-through-interceptor]"
/// Says what is wrong with the command line, and the usage, and exits with status 2.
func fail(_ problem: String) -> Never {
    let text = "pitlane-bench-server: \(problem)\n\(usage)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

var port = 0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
var maxStreams = 100
var metricsOn = false
var otlpEndpoint: String?
var passThrough = false
while let flag = arguments.next() {
    switch flag {
    case "--metrics": metricsOn = true
    case "--otlp-endpoint": otlpEndpoint = arguments.next()
    case "--pass-through-interceptor": passThrough = true
    case "--help", "-h":
        print(usage)
        exit(0)
    case "--port", "--max-streams":
        guard let value = arguments.next().flatMap(Int.init) else {
            fail("\(flag) needs a whole number")
        }
        if flag == "--port" { port = value } else { maxStreams = value }
    default:
        fail("unknown option \(flag)")
    }
}
var config = HTTP2ServerTransport.Config.defaults
config.eventLoops.threads = 1
config.http2.maxConcurrentStreams = maxStreams
let services: [any RegistrableRPCService] = [BenchService()]
let metrics = metricsOn ? ServerMetrics(services: services) : nil
// gRPC-Web and Connect beside gRPC, as the project's servers serve them (bench-grpc's web rows).
var web = WebConfig()
if let metrics {
    web.httpEndpoints["/metrics"] = HTTPEndpoint {
        .text(200, metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
}
config.web = web
// Tracing: the exporter and where it sends.
let tracing = otlpEndpoint.map { (spans: OTLPSpanExporter(serviceName: "pitlane-bench-server"), endpoint: $0) }
let transport = HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: port), config: config)
let interceptors: [any ServerInterceptor] =
    tracing.map { [TracingServerInterceptor(exporter: $0.spans)] }
    ?? (passThrough ? [PassThroughInterceptor()] : [])
let server = GRPCServer(transport: transport, services: services, interceptors: interceptors, observer: metrics)
metrics?.observe(transport)

// SIGTERM ends the server (the default action), even when started from a thread that blocks it.
System.unblockTerminationSignals()

// The main thread only waits: an async main parks it in libdispatch's sigsuspend, which
// valgrind 3.19 (Debian 12) cannot follow, and scripts/bench-instructions runs this server
// under valgrind. Detached: top-level code is on the main actor, and the main thread waits.
Task.detached { [tracing] in
    do {
        let serve: () async throws -> Void = {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.serve() }
                let bound = try await server.listeningAddress
                print("listening \(bound.port ?? 0)")
                fflush(nil)  // flushes every output stream; the harness reads this line through a pipe
                try await group.waitForAll()
            }
        }
        // With tracing, spans go to the collector in batches while the server runs.
        if let tracing {
            try await tracing.spans.exporting(to: tracing.endpoint, body: serve)
        } else {
            try await serve()
        }
        exit(0)
    } catch {
        print("pitlane-bench-server: \(error)")
        exit(1)
    }
}
while true { pause() }
