import COpenSSL
import PitlaneProtobuf

/// The server's side of the opening handshake (RFC 6455 §4.2): whether an HTTP/1.1 request
/// asks for a WebSocket, and the answer to it.
enum WebSocketHandshake {
    /// What to do with a request.
    enum Outcome {
        /// Not a WebSocket upgrade: serve it as HTTP.
        case notAnUpgrade
        /// Switch protocols: send `response` (101), then run `handler`.
        case accept(response: [UInt8], handler: WebSocketEndpoint.Handler)
        /// Refuse with this status, headers and reason.
        case refuse(status: Int, headers: [(name: String, value: String)], reason: String)
    }

    /// The GUID that RFC 6455 appends to the client's key.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    static func evaluate(_ head: HTTPRequestHead, isHTTP11: Bool, endpoint: WebSocketEndpoint?, cors: CORSPolicy) -> Outcome {
        guard let upgrade = head.header("upgrade"), hasToken(upgrade, "websocket") else { return .notAnUpgrade }
        guard let endpoint else { return .refuse(status: 404, headers: [], reason: "no WebSocket endpoint here") }
        guard head.method == "GET" else {
            return .refuse(status: 405, headers: [("allow", "GET")], reason: "a WebSocket handshake is a GET")
        }
        guard isHTTP11, let connection = head.header("connection"), hasToken(connection, "upgrade") else {
            return .refuse(status: 400, headers: [], reason: "a WebSocket handshake needs HTTP/1.1 and connection: upgrade")
        }
        guard head.header("sec-websocket-version") == "13" else {
            return .refuse(status: 426, headers: [("sec-websocket-version", "13")], reason: "only WebSocket version 13 is spoken here")
        }
        guard let key = head.header("sec-websocket-key"), Base64.decode(key)?.count == 16 else {
            return .refuse(status: 400, headers: [], reason: "sec-websocket-key must be 16 bytes in base64")
        }
        // Browsers send the page's origin: a page from another site may not use the user's
        // connection (cross-site WebSocket hijacking) unless the CORS policy allows it.
        if let origin = head.header("origin"), !isSameOrigin(origin, host: head.header("host")), !cors.allows(origin) {
            return .refuse(status: 403, headers: [], reason: "origin \(origin) may not open WebSockets here")
        }
        guard let handler = endpoint.route(head.path) else {
            return .refuse(status: 404, headers: [], reason: "no WebSocket at \(head.path)")
        }
        let response =
            "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
            + "sec-websocket-accept: \(acceptValue(for: key))\r\n\r\n"
        return .accept(response: Array(response.utf8), handler: handler)
    }

    /// base64(SHA-1(key + GUID)).
    static func acceptValue(for key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_Digest(input, input.count, &digest, &length, EVP_sha1(), nil)
        return Base64.encode(Array(digest.prefix(Int(length))))
    }

    /// Whether a comma-separated header value holds `token`, case aside.
    private static func hasToken(_ value: String, _ token: String) -> Bool {
        value.split(separator: ",").contains { $0.trimmingCharacters(in: " ").lowercased() == token }
    }

    /// Whether `origin` (`scheme://host[:port]`) names the host the request was sent to.
    private static func isSameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host else { return false }
        let parts = origin.split(separator: "/", omittingEmptySubsequences: true)
        // "https:", then the authority.
        return parts.count == 2 && parts[0].last == ":" && parts[1].lowercased() == host.lowercased()
    }
}
