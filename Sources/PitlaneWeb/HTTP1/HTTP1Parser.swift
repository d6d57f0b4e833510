import CHTTPParser

/// What an ``HTTP1Parser`` reports, in order, for each request.
protocol HTTP1ParserDelegate: AnyObject {
    /// The request line and headers are complete. False stops parsing (the connection
    /// has answered the request and will close): ``HTTP1Parser/parse(_:)`` throws `.stopped`.
    func parserReceivedHead(_ head: HTTP1Parser.RequestHead) -> Bool
    /// False stops parsing, as for the head.
    func parserReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The request (with its body) is complete; the parser pauses until ``HTTP1Parser/resume()``.
    func parserCompletedRequest()
}

/// HTTP/1.1 requests from bytes, with Debian's http-parser (nodejs/http-parser 2.9): it
/// owns the C parser, collects the request line and headers within a byte limit, and
/// pauses after each request so that pipelined requests are served one at a time. I/O
/// stays with the connection.
final class HTTP1Parser {
    struct RequestHead {
        var head: HTTPRequestHead
        var version: (major: UInt16, minor: UInt16)
        /// Whether the connection may carry another request after this one.
        var keepAlive: Bool
        /// How many `content-length` headers there were, and whether `transfer-encoding` was sent.
        var contentLengthCount: Int
        var hasTransferEncoding: Bool
    }

    /// Why parsing stopped.
    enum Failure: Error, Equatable {
        /// The request line (the URL) passed the header limit: 414.
        case requestLineTooLong
        /// The headers passed the limit: 431.
        case headersTooLarge
        /// Malformed HTTP (http-parser's reason): 400.
        case malformed(String)
        /// The delegate stopped parsing, having answered already.
        case stopped
    }

    private let parser: UnsafeMutablePointer<http_parser>
    private let maxHeaderBytes: Int
    /// The connection, which owns the parser: unowned, and unchecked as nghttp2's session's
    /// is, since every header field calls back.
    unowned(unsafe) var delegate: (any HTTP1ParserDelegate)!
    /// Set by a callback that stopped the parser.
    private(set) var failure: Failure?
    private var url: [UInt8] = []
    private var headers: [(name: String, value: String)] = []
    private var field: [UInt8] = []
    private var value: [UInt8] = []
    private var inValue = false
    private var headBytes = 0

    init(maxHeaderBytes: Int) {
        self.maxHeaderBytes = maxHeaderBytes
        parser = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_REQUEST)
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        parser.deallocate()
    }

    /// Whether the parser waits after a complete request.
    var isPaused: Bool { parser.pointee.http_errno == HPE_PAUSED.rawValue }

    /// Whether any byte of a request not yet complete has been parsed.
    private(set) var isInsideRequest = false

    /// Parses `bytes`; returns how many were taken (fewer when it paused after a request:
    /// the rest is the next, pipelined request). Throws ``Failure`` on a bad request.
    func parse(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> Int {
        guard !isPaused else { return 0 }
        let taken = bytes.withMemoryRebound(to: CChar.self) { chars in
            withUnsafePointer(to: Self.settings) { http_parser_execute(parser, $0, chars.baseAddress, chars.count) }
        }
        let errno = http_errno(rawValue: parser.pointee.http_errno)
        if errno == HPE_PAUSED { return taken }
        if let failure { throw failure }
        if errno != HPE_OK { throw .malformed(String(cString: http_errno_description(errno))) }
        if parser.pointee.upgrade == 1 {
            // `Upgrade: h2c` (or another protocol) is declined: the request was served as
            // HTTP/1.1 and what follows is parsed as the next request.
            parser.pointee.upgrade = 0
        }
        return taken
    }

    /// The end of the connection's input: a request cut short is malformed.
    func finish() throws(Failure) {
        guard isInsideRequest else { return }
        _ = withUnsafePointer(to: Self.settings) { http_parser_execute(parser, $0, nil, 0) }
        throw .malformed("the connection ended inside a request")
    }

    /// Parses the next request, after the one that paused it was answered.
    func resume() {
        http_parser_pause(parser, 0)
    }

    // MARK: Callbacks

    private static func owner(_ parser: UnsafeMutablePointer<http_parser>?) -> HTTP1Parser {
        Unmanaged<HTTP1Parser>.fromOpaque(parser!.pointee.data).takeUnretainedValue()
    }

    /// Counts head bytes; false (stop) past the limit.
    private func count(_ length: Int, failure: Failure) -> Bool {
        headBytes += length
        guard headBytes <= maxHeaderBytes else {
            self.failure = failure
            return false
        }
        return true
    }

    /// A callback's answer to the C parser: 0 to go on, 1 to stop.
    private func proceed(_ goOn: Bool) -> Int32 {
        if goOn { return 0 }
        failure = .stopped
        return 1
    }

    private func endHeaderField() {
        guard inValue else { return }
        headers.append((String(decoding: field, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self)))
        field.removeAll(keepingCapacity: true)
        value.removeAll(keepingCapacity: true)
        inValue = false
    }

    /// The callbacks, shared by every parser and never changed once made.
    private static let settings: http_parser_settings = {
        var settings = http_parser_settings()
        http_parser_settings_init(&settings)
        settings.on_message_begin = { parser in
            let owner = owner(parser)
            owner.isInsideRequest = true
            owner.url.removeAll(keepingCapacity: true)
            owner.headers = []
            owner.headBytes = 0
            owner.inValue = false
            return 0
        }
        settings.on_url = { parser, data, length in
            let owner = owner(parser)
            guard owner.count(length, failure: .requestLineTooLong) else { return 1 }
            owner.url.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
            return 0
        }
        settings.on_header_field = { parser, data, length in
            let owner = owner(parser)
            guard owner.count(length, failure: .headersTooLarge) else { return 1 }
            owner.endHeaderField()
            owner.field.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
            return 0
        }
        settings.on_header_value = { parser, data, length in
            let owner = owner(parser)
            guard owner.count(length, failure: .headersTooLarge) else { return 1 }
            owner.inValue = true
            owner.value.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
            return 0
        }
        settings.on_headers_complete = { parser in
            let owner = owner(parser)
            owner.endHeaderField()
            let raw = parser!.pointee
            let method = String(cString: http_method_str(http_method(rawValue: raw.method)))
            let head = RequestHead(
                head: HTTPRequestHead(method: method, path: String(decoding: owner.url, as: UTF8.self), headers: owner.headers),
                version: (raw.http_major, raw.http_minor),
                keepAlive: http_should_keep_alive(parser) != 0,
                contentLengthCount: owner.headers.count { $0.name == "content-length" },
                hasTransferEncoding: owner.headers.contains { $0.name == "transfer-encoding" }
            )
            owner.headers = []
            return owner.proceed(owner.delegate.parserReceivedHead(head))
        }
        settings.on_body = { parser, data, length in
            let owner = owner(parser)
            return owner.proceed(owner.delegate.parserReceivedBody(UnsafeRawBufferPointer(start: data, count: length)))
        }
        settings.on_message_complete = { parser in
            let owner = owner(parser)
            owner.isInsideRequest = false
            http_parser_pause(parser, 1)
            owner.delegate.parserCompletedRequest()
            return 0
        }
        return settings
    }()
}
