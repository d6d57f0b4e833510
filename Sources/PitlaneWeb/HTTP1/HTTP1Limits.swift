/// What one HTTP/1.1 connection may ask of the server; a request past a limit gets its
/// status (400, 408, 413, 431) and the connection closes.
public struct HTTP1Limits: Sendable {
    /// The request line and headers together, in bytes (431 past it). Default 16 KiB.
    public var maxHeaderBytes = 16_384
    /// A request body, in bytes (413 past it). Default 4 MiB and 5 bytes: one message of the
    /// transport's default limit in its envelope.
    public var maxBodyBytes = 4 * 1024 * 1024 + 5
    /// How long a request's head may take to arrive, from its first byte or from the end of
    /// the previous response (408 past it, against one header byte per second). Default 10 s.
    public var headTimeout: Duration = .seconds(10)
    /// How long a connection may wait between requests before it is closed. Default 60 s.
    public var idleTimeout: Duration = .seconds(60)
    /// Requests one connection may make; the last response says `connection: close`. Default 1,000.
    public var maxRequestsPerConnection = 1_000

    /// The default limits: 16 KiB of head, 4 MiB + 5 bytes of body, 10 s head and 60 s idle timeouts, 1,000 requests.
    public init() {}
}
