/// Per-method defaults a client applies: timeouts, message size limits, retries, hedging.
///
/// The most specific entry wins: one naming the method, then one naming its service, then
/// one naming neither (the default for every method).
public struct ServiceConfig: Sendable {
    public var methodConfigs: [MethodConfig]

    public init(methodConfigs: [MethodConfig] = []) {
        self.methodConfigs = methodConfigs
    }

    /// The config that applies to `method`, if any.
    public func config(for method: MethodDescriptor) -> MethodConfig? {
        let exact = MethodConfig.Name(service: method.service.fullyQualifiedService, method: method.method)
        let service = MethodConfig.Name(service: method.service.fullyQualifiedService, method: "")
        let fallback = MethodConfig.Name(service: "", method: "")
        for name in [exact, service, fallback] {
            if let config = methodConfigs.first(where: { $0.names.contains(name) }) { return config }
        }
        return nil
    }
}

/// Settings for the methods it names.
public struct MethodConfig: Sendable {
    /// A method, all methods of a service (empty method), or every method (both empty).
    public struct Name: Sendable, Hashable {
        public var service: String
        public var method: String

        public init(service: String, method: String = "") {
            self.service = service
            self.method = method
        }
    }

    /// Retry failed attempts, or hedge by sending several at once.
    public enum ExecutionPolicy: Sendable {
        case retry(RetryPolicy)
        case hedge(HedgingPolicy)
    }

    public var names: [Name]
    public var timeout: Duration?
    public var waitForReady: Bool?
    public var maxRequestMessageBytes: Int?
    public var maxResponseMessageBytes: Int?
    public var executionPolicy: ExecutionPolicy?

    public init(
        names: [Name], timeout: Duration? = nil, waitForReady: Bool? = nil,
        maxRequestMessageBytes: Int? = nil, maxResponseMessageBytes: Int? = nil,
        executionPolicy: ExecutionPolicy? = nil
    ) {
        self.names = names
        self.timeout = timeout
        self.waitForReady = waitForReady
        self.maxRequestMessageBytes = maxRequestMessageBytes
        self.maxResponseMessageBytes = maxResponseMessageBytes
        self.executionPolicy = executionPolicy
    }
}

/// gRFC A6 retries: attempts that fail with a retryable code before the server answers with
/// headers are tried again after an exponential, jittered backoff.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included; at least 2 for retries to happen (gRFC A6 caps it at 5).
    public var maxAttempts: Int
    public var initialBackoff: Duration
    public var maxBackoff: Duration
    public var backoffMultiplier: Double
    /// Codes worth another attempt, typically `.unavailable`.
    public var retryableStatusCodes: Set<Status.Code>

    public init(
        maxAttempts: Int, initialBackoff: Duration, maxBackoff: Duration, backoffMultiplier: Double,
        retryableStatusCodes: Set<Status.Code>
    ) {
        self.maxAttempts = min(max(maxAttempts, 1), 5)
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.backoffMultiplier = backoffMultiplier
        self.retryableStatusCodes = retryableStatusCodes
    }
}

/// gRFC A6 hedging: up to `maxAttempts` attempts started `hedgingDelay` apart; the first to
/// get response headers (or a non-fatal status) wins and the others are cancelled.
public struct HedgingPolicy: Sendable {
    public var maxAttempts: Int
    public var hedgingDelay: Duration
    /// Codes after which the next attempt starts at once; any other code ends the RPC.
    public var nonFatalStatusCodes: Set<Status.Code>

    public init(maxAttempts: Int, hedgingDelay: Duration, nonFatalStatusCodes: Set<Status.Code>) {
        self.maxAttempts = min(max(maxAttempts, 1), 5)
        self.hedgingDelay = hedgingDelay
        self.nonFatalStatusCodes = nonFatalStatusCodes
    }
}
