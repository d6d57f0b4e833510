/// Files a server sends for `GET` requests that name them, held in memory: a small web app
/// served from the same port as its RPCs. `/` and any path ending in `/` name its
/// `index.html`.
///
/// ```swift
/// config.staticFiles = StaticFiles(["index.html": Array(html.utf8), "app.js": Array(script.utf8)])
/// ```
public struct StaticFiles: Sendable {
    /// One file and the head it is sent with.
    struct File: Sendable {
        let bytes: [UInt8]
        let responseHead: HTTPResponseHead
        /// A strong validator: the content's FNV-1a hash.
        let etag: String

        /// The answer to a GET or HEAD: the file, or 304 when the client's copy is current.
        func response(to head: HTTPRequestHead) -> (HTTPResponseHead, body: [UInt8]) {
            if let known = head.header("if-none-match"),
                known.split(separator: ",").contains(where: { $0.trimmingCharacters(in: " ") == etag })
            {
                return (HTTPResponseHead(status: 304, headers: [("etag", etag), ("cache-control", "no-cache")]), [])
            }
            return (responseHead, head.method == "HEAD" ? [] : bytes)
        }
    }

    private var files: [String: File] = [:]

    /// - Parameter files: contents by relative path (`"index.html"`, `"js/app.js"`); the
    ///   content type comes from the name's extension.
    public init(_ files: [String: [UInt8]]) {
        for (path, bytes) in files {
            let name = path.hasPrefix("/") ? path : "/" + path
            let etag =
                "\"" + String(bytes.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }, radix: 16) + "\""
            let head = HTTPResponseHead(
                status: 200,
                headers: [
                    ("content-type", Self.contentType(of: name)),
                    // Revalidated on each load (cheaply, by ETag): a deployment changes the app
                    // under a running browser.
                    ("cache-control", "no-cache"),
                    ("etag", etag),
                    ("x-content-type-options", "nosniff"),
                ])
            self.files[name] = File(bytes: bytes, responseHead: head, etag: etag)
        }
    }

    /// The paths served.
    public var paths: [String] { files.keys.sorted() }

    func file(at path: Substring) -> File? {
        path.hasSuffix("/") ? files[path + "index.html"] : files[String(path)]
    }

    static func contentType(of name: String) -> String {
        let suffix = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return switch suffix {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "json": "application/json"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "ico": "image/x-icon"
        case "txt": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }
}
