// The code of the article "Deadlines, retries and hedging" (Pitlane.docc/DeadlinesAndRetries.md).
import Pitlane

func callWithDeadline(greeter: Hello_Greeter.Client<HTTP2ClientTransport>) async throws {
    do {
        _ = try await greeter.sayHello(.with { $0.name = "Ada" }, options: .defaults.with { $0.timeout = .milliseconds(250) })
    } catch let error as RPCError where error.code == .deadlineExceeded {
        print("no answer within 250 ms")
    }
}

struct PatientGreeter: Hello_Greeter.SimpleServiceProtocol {
    func sayHello(request: HelloRequest, context: ServerContext) async throws -> HelloReply {
        if let deadline = context.deadline, deadline - .now < .milliseconds(10) {
            throw RPCError(code: .deadlineExceeded, message: "too little time left to answer")
        }
        try await Task.sleep(for: .milliseconds(5))  // cancelled when the deadline passes
        return .with { $0.message = "Hello, \(request.name)!" }
    }

    func lotsOfReplies(request: HelloRequest, response: RPCWriter<HelloReply>, context: ServerContext) async throws {}

    func lotsOfGreetings(request: RPCAsyncSequence<HelloRequest, any Error>, context: ServerContext) async throws -> HelloReply {
        HelloReply()
    }

    func bidiHello(
        request: RPCAsyncSequence<HelloRequest, any Error>, response: RPCWriter<HelloReply>, context: ServerContext
    ) async throws {}
}

func retryingClient() throws -> HTTP2ClientTransport {
    let retries = MethodConfig(
        names: [MethodConfig.Name(service: "hello.Greeter")],  // every method of the service
        timeout: .seconds(5),
        executionPolicy: .retry(
            RetryPolicy(
                maxAttempts: 4, initialBackoff: .milliseconds(100), maxBackoff: .seconds(1), backoffMultiplier: 2,
                retryableStatusCodes: [.unavailable]
            ))
    )
    return try HTTP2ClientTransport(
        target: .dns(host: "greeter.internal", port: 8080), serviceConfig: ServiceConfig(methodConfigs: [retries])
    )
}

func hedgingClient() throws -> HTTP2ClientTransport {
    let hedging = MethodConfig(
        names: [MethodConfig.Name(service: "hello.Greeter", method: "SayHello")],
        executionPolicy: .hedge(HedgingPolicy(maxAttempts: 3, hedgingDelay: .milliseconds(50), nonFatalStatusCodes: [.unavailable]))
    )
    var config = HTTP2ClientTransport.Config.defaults
    config.loadBalancing = .roundRobin  // so the hedged attempts go to different replicas
    return try HTTP2ClientTransport(
        target: .dns(host: "greeter.internal", port: 8080), config: config, serviceConfig: ServiceConfig(methodConfigs: [hedging])
    )
}
