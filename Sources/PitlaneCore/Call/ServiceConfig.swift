/// Per-method defaults a client applies: timeouts, message size limits, retries, hedging.
///
/// The most specific entry wins: one naming the method, then one naming its service, then
/// one naming neither (the default for every method).
public struct ServiceConfig: Sendable {
    /// The method configs to choose from; for each name, the first config listing it applies.
    public var methodConfigs: [MethodConfig]

    /// Creates a service config from method configs; with none (the default), calls use only their own `CallOptions`.
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
        /// The fully qualified service name, such as `swiftkart.SwiftKartService`; empty to match every service.
        public var service: String
        /// The method name within the service, such as `ListRaces`; empty to match every method of the service.
        public var method: String

        /// Names a method of `service`, or every method of it when `method` is empty (the default).
        public init(service: String, method: String = "") {
            self.service = service
            self.method = method
        }
    }

    /// Retry failed attempts, or hedge by sending several at once.
    public enum ExecutionPolicy: Sendable {
        /// Retry attempts that fail with a retryable code, one after another.
        case retry(RetryPolicy)
        /// Start several attempts a delay apart and keep the first to answer.
        case hedge(HedgingPolicy)
    }

    /// The methods, services, or catch-all (both fields empty) these settings apply to.
    public var names: [Name]
    /// How long a call may take before it fails with `.deadlineExceeded`; nil for no limit.
    public var timeout: Duration?
    /// Whether calls wait for a connection while it is down (true) or fail at once with `.unavailable`; nil means false.
    public var waitForReady: Bool?
    /// The largest request message the client sends, in bytes; nil for no limit.
    public var maxRequestMessageBytes: Int?
    /// The largest response message the client accepts, in bytes; nil for the default of 4 MiB.
    public var maxResponseMessageBytes: Int?
    /// Whether to retry or hedge calls, and how; nil for a single attempt.
    public var executionPolicy: ExecutionPolicy?

    /// Creates settings for the named methods; values a call sets in its `CallOptions` override them, and nil (the default) sets nothing.
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
    /// The backoff before the first retry; each retry waits a random time between zero and the current backoff.
    public var initialBackoff: Duration
    /// The longest the backoff grows to.
    public var maxBackoff: Duration
    /// The factor the backoff grows by after each retry.
    public var backoffMultiplier: Double
    /// Codes worth another attempt, typically `.unavailable`.
    public var retryableStatusCodes: Set<Status.Code>

    /// Creates a retry policy; `maxAttempts` is clamped to 1...5.
    ///
    /// - Parameters:
    ///   - maxAttempts: Attempts in all, the first included.
    ///   - initialBackoff: The backoff before the first retry.
    ///   - maxBackoff: The longest the backoff grows to.
    ///   - backoffMultiplier: The factor the backoff grows by after each retry.
    ///   - retryableStatusCodes: The codes that earn another attempt.
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
    /// Attempts in all, the first included, from 1 to 5.
    public var maxAttempts: Int
    /// How long to wait after starting an attempt before starting the next, unless one answers first.
    public var hedgingDelay: Duration
    /// Codes after which the next attempt starts at once; any other code ends the RPC.
    public var nonFatalStatusCodes: Set<Status.Code>

    /// Creates a hedging policy; `maxAttempts` is clamped to 1...5.
    public init(maxAttempts: Int, hedgingDelay: Duration, nonFatalStatusCodes: Set<Status.Code>) {
        self.maxAttempts = min(max(maxAttempts, 1), 5)
        self.hedgingDelay = hedgingDelay
        self.nonFatalStatusCodes = nonFatalStatusCodes
    }
}
