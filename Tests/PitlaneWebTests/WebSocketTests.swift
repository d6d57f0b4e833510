import PitlaneHTTP2
import Testing

@testable import PitlaneWeb

/// The WebSocket pieces that do no I/O. End to end, over real sockets, the seed's chat clients
/// are judged by Python `websockets` (Tests/Peers/websocket_peer.py, from OrdersTests).
@Suite("WebSocket handshake and keepalive", .timeLimit(.minutes(1)))
struct WebSocketTests {
    static let endpoint = WebSocketEndpoint { path in
        let handler: WebSocketEndpoint.Handler = { _ in }
        return path == "/chat" ? handler : nil
    }

    func head(
        _ extra: [(String, String)] = [], dropping: Set<String> = [], path: String = "/chat", method: String = "GET"
    ) -> HTTPRequestHead {
        let usual = [
            ("host", "example.test:8090"), ("upgrade", "websocket"), ("connection", "keep-alive, Upgrade"),
            ("sec-websocket-version", "13"), ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ]
        let headers = usual.filter { !dropping.contains($0.0) } + extra
        return HTTPRequestHead(method: method, path: path, headers: headers.map { (name: $0.0, value: $0.1) })
    }

    func status(
        _ head: HTTPRequestHead, http11: Bool = true, endpoint: WebSocketEndpoint? = endpoint,
        cors: CORSPolicy = .sameOriginOnly
    ) -> Int {
        switch WebSocketHandshake.evaluate(head, isHTTP11: http11, endpoint: endpoint, cors: cors) {
        case .notAnUpgrade: 0
        case .accept: 101
        case .refuse(let status, _, _): status
        }
    }

    @Test("the accept value is RFC 6455's own example")
    func acceptValue() {
        #expect(WebSocketHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test("a good upgrade is accepted; every broken one gets its HTTP status")
    func handshake() {
        #expect(status(head()) == 101)
        #expect(status(head(dropping: ["upgrade"])) == 0)  // plain HTTP
        #expect(status(head(), endpoint: nil) == 404)
        #expect(status(head(path: "/elsewhere")) == 404)
        #expect(status(head(method: "POST")) == 405)
        #expect(status(head(), http11: false) == 400)
        #expect(status(head(dropping: ["connection"])) == 400)
        #expect(status(head(dropping: ["sec-websocket-version"])) == 426)
        #expect(status(head([("sec-websocket-version", "8")], dropping: ["sec-websocket-version"])) == 426)
        #expect(status(head(dropping: ["sec-websocket-key"])) == 400)
        #expect(status(head([("sec-websocket-key", "c2hvcnQ=")], dropping: ["sec-websocket-key"])) == 400)
    }

    @Test("origins: the page's own host is allowed; another site only when the CORS policy allows it")
    func origins() {
        #expect(status(head([("origin", "http://example.test:8090")])) == 101)
        #expect(status(head([("origin", "https://evil.test")])) == 403)
        #expect(status(head([("origin", "https://app.test")]), cors: CORSPolicy(allowedOrigins: ["https://app.test"])) == 101)
    }

    @Test("keepalive: a quiet interval pings, a second one closes; any frame resets it")
    func keepalive() {
        var keepalive = WebSocketKeepalive()
        #expect(keepalive.intervalElapsed() == .none)  // the connection just opened
        #expect(keepalive.intervalElapsed() == .ping)
        keepalive.frameReceived()  // the pong
        #expect(keepalive.intervalElapsed() == .none)
        #expect(keepalive.intervalElapsed() == .ping)
        #expect(keepalive.intervalElapsed() == .close)
    }

    @Test("static files: a path names its file, a directory its index.html, with the content type of its extension")
    func staticFiles() {
        let files = StaticFiles(["index.html": [1], "js/app.js": [2]])
        #expect(files.file(at: "/")?.bytes == [1])
        #expect(files.file(at: "/js/app.js")?.responseHead.headers.first?.value == "text/javascript; charset=utf-8")
        #expect(files.file(at: "/missing.css") == nil)
        #expect(files.file(at: "/../etc/passwd") == nil)
    }
}
