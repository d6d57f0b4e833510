// The code of the article "Observability" (Pitlane.docc/Observability.md).
import Pitlane
import PitlaneErrorDetails
import PitlaneHealth
import PitlaneObservability
import PitlaneReflection

func observedServer() throws -> GRPCServer<HTTP2ServerTransport> {
    let greeter = GreeterService()
    let health = HealthService()
    let metrics = ServerMetrics(services: [greeter])
    let reflection = try ReflectionService(services: [
        (Hello_Greeter.descriptor, Hello_Greeter.fileDescriptorProtos),
        (Grpc_Health_V1_Health.descriptor, Grpc_Health_V1_Health.fileDescriptorProtos),
    ])
    var config = HTTP2ServerTransport.Config.defaults
    config.addOperatorEndpoints(metrics: metrics, health: health)  // /metrics, /healthz, /readyz
    return GRPCServer(
        transport: .http2(address: .ipv4(host: "0.0.0.0", port: 8080), config: config),
        services: [greeter, health, reflection],
        interceptors: [AccessLogInterceptor(format: .json)],
        observer: metrics
    )
}

func clientMetrics(transport: HTTP2ClientTransport) async throws -> String {
    let metrics = ClientMetrics(target: transport.target, methods: Hello_Greeter.Method.descriptors)
    try await withGRPCClient(transport: transport, observer: metrics) { client in
        _ = try await Hello_Greeter.Client(wrapping: client).sayHello(.with { $0.name = "Ada" })
    }
    return metrics.render()  // Prometheus text: grpc_client_attempt_started_total and the rest
}

func tracedServer(transport: HTTP2ServerTransport) async throws {
    try await withOTLPExporter(endpoint: "127.0.0.1:4317", serviceName: "greeter") { exporter in
        let server = GRPCServer(
            transport: transport, services: [GreeterService()], interceptors: [TracingServerInterceptor(exporter: exporter)]
        )
        try await server.serve()
    }
}

func richError(name: String) throws -> RPCError {
    try RPCError(
        code: .failedPrecondition, message: "\(name) is not on the guest list",
        details: [
            Google_Rpc_ErrorInfo.with {
                $0.reason = "NOT_INVITED"
                $0.domain = "greeter.example"
            }
        ]
    )
}

func readRichError(_ error: RPCError) {
    if let info = error.detail(Google_Rpc_ErrorInfo.self) {
        print("refused: \(info.reason)")
    }
}

func healthAndDraining(health: HealthService, server: GRPCServer<HTTP2ServerTransport>) {
    health.setStatus(.serving, forService: "hello.Greeter")
    // On SIGTERM: report NOT_SERVING so balancers stop sending, then drain.
    health.enterNotServing()
    server.beginGracefulShutdown()
}
