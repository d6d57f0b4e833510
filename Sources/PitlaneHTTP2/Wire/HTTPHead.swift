/// A request's head, as an HTTP/1.1 or an HTTP/2 connection received it. Header names are
/// lower-case; `path` keeps its query.
package struct HTTPRequestHead {
    package var method: String
    package var path: String
    package var headers: [(name: String, value: String)]

    package init(method: String, path: String, headers: [(name: String, value: String)]) {
        self.method = method
        self.path = path
        self.headers = headers
    }

    /// The first value of a header.
    package func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// A content type's media type: lower-case, without parameters (`; charset=utf-8`).
    package static func mediaType(_ contentType: String) -> String {
        var type = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }
        while type.last == UInt8(ascii: " ") { type = type.dropLast() }
        return String(decoding: type, as: UTF8.self).lowercased()
    }

    /// The path without its query, and the query's `name=value` pairs, percent-decoded.
    package var pathAndQuery: (path: Substring, query: [(name: String, value: [UInt8])]) {
        // In the string's own bytes: walking `String.UTF8View` indices costs tens of
        // instructions a byte, and this runs for every request.
        var path = path
        let offset = path.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count, bytes[offset] != UInt8(ascii: "?") { offset += 1 }
            return offset
        }
        guard offset < path.utf8.count else { return (path[...], []) }
        let mark = path.utf8.index(path.utf8.startIndex, offsetBy: offset)
        let query = path[path.index(after: mark)...].split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(decoding: URLQuery.decode(parts[0]), as: UTF8.self), URLQuery.decode(parts.count > 1 ? parts[1] : ""))
        }
        return (path[..<mark], query)
    }
}

/// A response's head, for either HTTP version to send: the connection adds what its
/// version needs (`:status`, or a status line, `content-length` or chunking).
package struct HTTPResponseHead {
    package var status: Int
    package var headers: [(name: String, value: String)]

    package init(status: Int, headers: [(name: String, value: String)]) {
        self.status = status
        self.headers = headers
    }
}

/// What a server connection does to answer an RPC, in order: what the protocol in use
/// (``ServerCall``) makes of the handler's parts.
package enum ResponseAction {
    /// Send the head; `endsStream` when no body follows.
    case head(HTTPResponseHead, endsStream: Bool)
    /// Send body bytes.
    case body(BodyBytes)
    /// End the body, with these HTTP trailers (gRPC over HTTP/2) or none.
    case end(trailers: [(name: String, value: String)])
}

extension ResponseAction {
    /// A whole plain-HTTP answer (a refusal, a CORS preflight) as actions: the head, and the
    /// body if there is one.
    package static func answer(_ head: HTTPResponseHead, body: [UInt8], _ perform: (ResponseAction) -> Void) {
        perform(.head(head, endsStream: body.isEmpty))
        guard !body.isEmpty else { return }
        perform(.body(BodyBytes(body)))
        perform(.end(trailers: []))
    }
}

/// `application/x-www-form-urlencoded` decoding of a query component: `%XX` and `+`.
package enum URLQuery {
    package static func decode(_ text: Substring) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            switch byte {
            case UInt8(ascii: "+"): output.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = bytes.next(), let low = bytes.next(), let value = hexValue(high, low) else {
                    output.append(byte)
                    continue
                }
                output.append(value)
            default: output.append(byte)
            }
        }
        return output
    }

    private static func hexValue(_ high: UInt8, _ low: UInt8) -> UInt8? {
        func digit(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        guard let high = digit(high), let low = digit(low) else { return nil }
        return high << 4 | low
    }
}
