/// A plain HTTP answer computed at each `GET` (or `HEAD`) of its path on the server's port:
/// metrics for Prometheus, health probes for a load balancer or Kubernetes. It runs on the
/// connection's event loop, so it must be quick and must not block.
///
/// ```swift
/// config.httpEndpoints["/healthz"] = HTTPEndpoint { .text(healthy ? 200 : 503, healthy ? "ok\n" : "not serving\n") }
/// ```
public struct HTTPEndpoint: Sendable {
    /// The answer to one request: status, content type and body.
    public struct Response: Sendable {
        /// The HTTP status code, such as 200 or 503.
        public var status: Int
        /// The `content-type` header's value.
        public var contentType: String
        /// The body bytes; left out of the answer to a `HEAD` request.
        public var body: [UInt8]

        /// An answer with the given status, content type and body.
        public init(status: Int, contentType: String, body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }

        /// A UTF-8 text answer.
        public static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> Response {
            Response(status: status, contentType: contentType, body: Array(text.utf8))
        }
    }

    let respond: @Sendable () -> Response

    /// An endpoint that calls `respond` for every `GET` or `HEAD` of its path; answers carry `cache-control: no-store`.
    public init(_ respond: @escaping @Sendable () -> Response) {
        self.respond = respond
    }

    func response(to head: HTTPRequestHead) -> (HTTPResponseHead, body: [UInt8]) {
        let answer = respond()
        let headers = [("content-type", answer.contentType), ("cache-control", "no-store")]
        return (HTTPResponseHead(status: answer.status, headers: headers), head.method == "HEAD" ? [] : answer.body)
    }
}
