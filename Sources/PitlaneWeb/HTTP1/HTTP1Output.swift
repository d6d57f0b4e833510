import PitlaneCore

/// What an HTTP/1.1 connection has to write: response heads and bodies, framed (a status
/// line, `content-length` or chunks), in one buffer written from an offset. Body bytes are
/// counted back to their stream's ``StreamOutbound`` as the socket takes them, so a
/// handler writing faster than the client reads waits.
struct HTTP1Output {
    private var buffer: [UInt8] = []
    private var offset = 0
    /// Bytes dropped from the front of `buffer` so far: positions below are absolute.
    private var dropped = 0
    /// Absolute positions where a stream's body bytes end, and how many they were.
    private var accounting = Deque<(end: Int, bytes: Int, outbound: StreamOutbound)>()

    var isEmpty: Bool { offset == buffer.count }

    /// A response head: status line, headers, then the framing the body needs.
    mutating func appendHead(_ head: HTTPResponseHead, framing: BodyFraming, closing: Bool) {
        append("HTTP/1.1 \(head.status) \(Self.reason(head.status))\r\n")
        for header in head.headers { append("\(header.name): \(header.value)\r\n") }
        switch framing {
        case .length(let count): append("content-length: \(count)\r\n")
        case .chunked: append("transfer-encoding: chunked\r\n")
        case .untilClose: break
        }
        append(closing ? "connection: close\r\n\r\n" : "\r\n")
    }

    /// Body bytes, as a chunk when `chunked`.
    mutating func appendBody(_ bytes: BodyBytes, chunked: Bool, outbound: StreamOutbound?) {
        guard !bytes.isEmpty else { return }
        if chunked { append(String(bytes.count, radix: 16) + "\r\n") }
        bytes.append(to: &buffer)
        if let outbound { accounting.append((dropped + buffer.count, bytes.count, outbound)) }
        if chunked { append("\r\n") }
    }

    /// The last chunk of a chunked body.
    mutating func appendLastChunk() { append("0\r\n\r\n") }

    mutating func append(_ text: String) { buffer.append(contentsOf: text.utf8) }

    /// Writes what `write` takes (a socket, or a TLS engine before it) until it takes no
    /// more; returns whether bytes remain. `write` returns how many bytes it took, nil or 0
    /// when it is full.
    mutating func write(with write: (UnsafeRawBufferPointer) throws -> Int?) throws -> Bool {
        while !isEmpty {
            let start = offset
            let written = try buffer.withUnsafeBytes { try write(UnsafeRawBufferPointer(rebasing: $0[start...])) } ?? 0
            guard written > 0 else { break }
            advance(by: written)
        }
        return !isEmpty
    }

    private mutating func advance(by written: Int) {
        offset += written
        while let first = accounting.first, first.end <= dropped + offset {
            _ = accounting.popFirst()
            first.outbound.sent(first.bytes)
        }
        if isEmpty {
            // Start over, keeping a modest buffer for the next response.
            dropped += buffer.count
            buffer.removeAll(keepingCapacity: buffer.capacity <= 65_536)
            offset = 0
        } else if offset >= 65_536 {
            // A client that never quite catches up must not keep what it has read.
            dropped += offset
            buffer.removeFirst(offset)
            offset = 0
        }
    }

    enum BodyFraming {
        case length(Int)
        case chunked
        /// HTTP/1.0: the body ends when the connection closes.
        case untilClose
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 499: "Client Closed Request"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
