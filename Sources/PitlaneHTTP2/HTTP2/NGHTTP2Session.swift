import CNGHTTP2

/// What an HTTP/2 session reports while reading frames, and asks for while writing DATA.
/// The connection that owns the session implements it, on its event loop.
protocol NGHTTP2SessionDelegate: AnyObject {
    func sessionBeganHeaders(stream: Int32)
    func sessionReceivedHeader(name: String, value: String, stream: Int32)
    /// The header list of the HEADERS block arriving on `stream` passed the limit; its
    /// further fields are not reported (they are still decoded, to keep HPACK in step).
    func sessionHeaderListTooLarge(stream: Int32, limit: Int)
    /// A HEADERS frame (request, response or trailers) is complete.
    func sessionEndedHeaders(stream: Int32, endStream: Bool)
    func sessionReceivedData(_ data: UnsafeRawBufferPointer, stream: Int32)
    /// END_STREAM arrived on a DATA frame.
    func sessionEndedData(stream: Int32)
    func sessionClosedStream(_ stream: Int32, errorCode: UInt32)
    func sessionReceivedGoAway(lastStreamID: Int32, errorCode: UInt32)
    /// The peer reset a stream (RST_STREAM).
    func sessionReceivedReset(stream: Int32)
    /// A PING arrived: a probe from the peer (nghttp2 answers it) or the ACK of ours.
    func sessionReceivedPing(isAck: Bool)
    /// The peer's SETTINGS arrived (not an ACK of ours); the first is its connection preface.
    func sessionReceivedSettings()
    /// Fills `buffer` with DATA for `stream`; `source` is what the delegate gave with the
    /// stream's headers (``NGHTTP2Session/submitResponse(stream:headers:hasBody:source:)``).
    func sessionReadData(
        stream: Int32, source: UnsafeMutableRawPointer?, into buffer: UnsafeMutableRawBufferPointer
    ) -> NGHTTP2Session.DataChunk
}

/// One nghttp2 session (client or server): frames in with `receive`, frames out with
/// `nextOutput`. It owns its `nghttp2_session` and frees it in `deinit`.
///
/// Flow control is manual: nghttp2 returns window to the peer only for bytes the stream's
/// reader has consumed (`consume`), so a slow reader bounds memory on both sides.
final class NGHTTP2Session {
    /// What a DATA read produced.
    enum DataChunk {
        /// `count` bytes; `end` when no more DATA follows; `trailers` when trailers will close
        /// the stream instead of END_STREAM on this frame.
        case bytes(count: Int, end: Bool, trailers: Bool)
        /// Nothing to send now; `resumeData(stream:)` when there is.
        case deferred
    }

    struct Failure: Error, CustomStringConvertible {
        let code: Int
        let call: String
        var description: String { "\(call) failed: \(String(cString: nghttp2_strerror(Int32(code))))" }
    }

    /// The session; set once in `init`.
    private(set) var raw: OpaquePointer!
    /// The connection; it owns the session, so the reference back is unowned. Unsafe
    /// rather than checked: nghttp2 calls back several times per frame, and a checked
    /// `unowned` load is an atomic operation each time.
    unowned(unsafe) var delegate: (any NGHTTP2SessionDelegate)!
    /// The largest header list accepted, counted as RFC 9113 §6.5.2 does (name, value and 32
    /// bytes per field). nghttp2 announces SETTINGS_MAX_HEADER_LIST_SIZE but does not enforce
    /// it on what it receives: HPACK lets a 128 KiB request repeat one 4 KiB field by index
    /// into hundreds of megabytes of headers, so the session counts them itself.
    let maxHeaderListBytes: Int
    /// The header block being received and its size so far; nil between blocks and once a
    /// block is over the limit. One at a time: a block's HEADERS and CONTINUATION frames
    /// come with no other frame between them (RFC 9113 §4.3).
    private var headerBlock: (stream: Int32, bytes: Int)?

    /// - Parameters:
    ///   - isServer: the server or the client side of the connection.
    ///   - maxHeaderListBytes: the largest header list accepted (SETTINGS_MAX_HEADER_LIST_SIZE).
    init(isServer: Bool, maxHeaderListBytes: Int = 16_384) {
        self.maxHeaderListBytes = maxHeaderListBytes
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            let session = owningSession(user)
            let stream = frame!.pointee.hd.stream_id
            session.headerBlock = (stream, 0)
            session.delegate.sessionBeganHeaders(stream: stream)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            let session = owningSession(user)
            let stream = frame!.pointee.hd.stream_id
            // No block: this one went over the limit already.
            guard let block = session.headerBlock, block.stream == stream else { return 0 }
            let total = block.bytes + nameLength + valueLength + 32
            guard total <= session.maxHeaderListBytes else {
                session.headerBlock = nil
                session.delegate.sessionHeaderListTooLarge(stream: stream, limit: session.maxHeaderListBytes)
                return 0
            }
            session.headerBlock = (stream, total)
            let name = HeaderStrings.string(UnsafeBufferPointer(start: name, count: nameLength))
            let value = HeaderStrings.string(UnsafeBufferPointer(start: value, count: valueLength))
            session.delegate.sessionReceivedHeader(name: name, value: value, stream: stream)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            let header = frame!.pointee.hd
            let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            let delegate = owningSession(user).delegate!
            switch Int(header.type) {
            case Int(NGHTTP2_HEADERS.rawValue):
                owningSession(user).headerBlock = nil
                delegate.sessionEndedHeaders(stream: header.stream_id, endStream: endStream)
            case Int(NGHTTP2_DATA.rawValue) where endStream:
                delegate.sessionEndedData(stream: header.stream_id)
            case Int(NGHTTP2_SETTINGS.rawValue) where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
                delegate.sessionReceivedSettings()
            case Int(NGHTTP2_RST_STREAM.rawValue):
                delegate.sessionReceivedReset(stream: header.stream_id)
            case Int(NGHTTP2_PING.rawValue):
                delegate.sessionReceivedPing(isAck: header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0)
            case Int(NGHTTP2_GOAWAY.rawValue):
                delegate.sessionReceivedGoAway(
                    lastStreamID: frame!.pointee.goaway.last_stream_id, errorCode: frame!.pointee.goaway.error_code
                )
            default:
                break
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, length, user in
            owningSession(user).delegate.sessionReceivedData(UnsafeRawBufferPointer(start: data, count: length), stream: stream)
            return 0
        }
        if isServer {
            // A server that has sent its whole response while the client is still sending asks
            // it to stop without error (RST_STREAM NO_ERROR, RFC 9113 §8.1), as gRPC servers do;
            // otherwise the stream would stay half open until the client half-closes.
            nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { session, frame, _ in
                let header = frame!.pointee.hd
                let endsStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
                let type = Int(header.type)
                if endsStream, type == Int(NGHTTP2_HEADERS.rawValue) || type == Int(NGHTTP2_DATA.rawValue),
                    nghttp2_session_get_stream_remote_close(session, header.stream_id) == 0
                {
                    nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), header.stream_id, NGHTTP2_NO_ERROR.rawValue)
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, errorCode, user in
            let session = owningSession(user)
            if session.headerBlock?.stream == stream { session.headerBlock = nil }
            session.delegate.sessionClosedStream(stream, errorCode: errorCode)
            return 0
        }

        var options: OpaquePointer?
        nghttp2_option_new(&options)
        defer { nghttp2_option_del(options) }
        nghttp2_option_set_no_auto_window_update(options, 1)
        nghttp2_option_set_max_send_header_block_length(options, 65_536)
        // The server connection limits the peer's RST_STREAM rate itself, to answer with
        // ENHANCE_YOUR_CALM as gRPC servers do; nghttp2's own limiter (INTERNAL_ERROR) stays out.
        nghttp2_option_set_stream_reset_rate_limit(options, UInt64(Int64.max), UInt64(Int64.max))

        var session: OpaquePointer?
        let user = Unmanaged<NGHTTP2Session>.passUnretained(self).toOpaque()
        if isServer {
            nghttp2_session_server_new2(&session, callbacks, user, options)
        } else {
            nghttp2_session_client_new2(&session, callbacks, user, options)
        }
        raw = session
    }

    deinit {
        nghttp2_session_del(raw)
    }

    // MARK: Frames in and out

    /// Feeds bytes read from the socket; throws when the peer broke the protocol (the
    /// session has then queued a GOAWAY to send).
    func receive(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress else { return }
        let result = nghttp2_session_mem_recv(raw, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if result < 0 { throw Failure(code: result, call: "nghttp2_session_mem_recv") }
    }

    /// The next bytes to write to the socket, valid until the next call; nil when none.
    func nextOutput() throws -> UnsafeRawBufferPointer? {
        var data: UnsafePointer<UInt8>?
        let count = nghttp2_session_mem_send(raw, &data)
        if count < 0 { throw Failure(code: count, call: "nghttp2_session_mem_send") }
        guard count > 0, let data else { return nil }
        return UnsafeRawBufferPointer(start: data, count: count)
    }

    /// Whether the session wants to read or write more; when neither, the connection is done.
    var isActive: Bool { nghttp2_session_want_read(raw) != 0 || nghttp2_session_want_write(raw) != 0 }

    // MARK: Submitting

    func submitSettings(_ settings: [(id: nghttp2_settings_id, value: UInt32)]) {
        var entries = settings.map { nghttp2_settings_entry(settings_id: Int32($0.id.rawValue), value: $0.value) }
        nghttp2_submit_settings(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
    }

    /// Raises the connection's receive window (WINDOW_UPDATE on stream 0) to `bytes`, so one
    /// stream that holds its whole stream window unread cannot stall the others.
    func setConnectionWindow(_ bytes: Int) {
        nghttp2_session_set_local_window_size(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(clamping: bytes))
    }

    /// Sends response headers; with `hasBody` false they end the stream (trailers-only).
    /// nghttp2 hands `source` back with each read of the body's DATA: the delegate must keep
    /// what it points to alive until the stream closes.
    func submitResponse(
        stream: Int32, headers: [(name: String, value: String)], hasBody: Bool,
        source: UnsafeMutableRawPointer? = nil
    ) throws {
        let result = Self.withHeaderFields(headers) { fields in
            guard hasBody else { return nghttp2_submit_response(raw, stream, fields.baseAddress, fields.count, nil) }
            var provider = Self.dataProvider
            provider.source.ptr = source
            return nghttp2_submit_response(raw, stream, fields.baseAddress, fields.count, &provider)
        }
        if result != 0 { throw Failure(code: Int(result), call: "nghttp2_submit_response") }
    }

    /// Opens a stream with request headers and a body read from the delegate; returns its id.
    func submitRequest(headers: [(name: String, value: String)]) throws -> Int32 {
        let stream = Self.withHeaderFields(headers) { fields in
            var provider = Self.dataProvider
            return nghttp2_submit_request(raw, nil, fields.baseAddress, fields.count, &provider, nil)
        }
        if stream < 0 { throw Failure(code: Int(stream), call: "nghttp2_submit_request") }
        return stream
    }

    func submitTrailer(stream: Int32, headers: [(name: String, value: String)]) throws {
        let result = Self.withHeaderFields(headers) { fields in
            nghttp2_submit_trailer(raw, stream, fields.baseAddress, fields.count)
        }
        if result != 0 { throw Failure(code: Int(result), call: "nghttp2_submit_trailer") }
    }

    func resetStream(_ stream: Int32, errorCode: UInt32) {
        nghttp2_submit_rst_stream(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, errorCode)
    }

    /// Announces that no new streams will be accepted past those already begun; `debug`
    /// travels as the GOAWAY's opaque data (gRPC sends "too_many_pings" that way).
    func submitGoAway(errorCode: UInt32 = NGHTTP2_NO_ERROR.rawValue, debug: String = "") {
        let last = nghttp2_session_get_last_proc_stream_id(raw)
        var data = Array(debug.utf8)
        nghttp2_submit_goaway(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, errorCode, &data, data.count)
    }

    /// The first step of a graceful GOAWAY: a GOAWAY with the largest stream id, so the peer
    /// opens no more streams while those it sent meanwhile are still taken.
    func submitShutdownNotice() {
        nghttp2_submit_shutdown_notice(raw)
    }

    /// Sends a PING; the peer must answer with an ACK.
    func submitPing() {
        nghttp2_submit_ping(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Asks nghttp2 to call `sessionReadData` again for a stream whose read was deferred.
    func resumeData(stream: Int32) {
        nghttp2_session_resume_data(raw, stream)
    }

    /// Returns window to the peer for bytes the application has read.
    func consume(stream: Int32, bytes: Int) {
        nghttp2_session_consume(raw, stream, bytes)
    }

    /// Returns connection-level window for bytes no stream will consume (a closed stream's).
    func consumeConnection(bytes: Int) {
        nghttp2_session_consume_connection(raw, bytes)
    }

    // MARK: C plumbing

    private static let dataProvider = nghttp2_data_provider(
        source: nghttp2_data_source(ptr: nil),
        read_callback: { _, stream, buffer, length, flags, source, user in
            let chunk = owningSession(user).delegate.sessionReadData(
                stream: stream, source: source?.pointee.ptr, into: UnsafeMutableRawBufferPointer(start: buffer, count: length)
            )
            switch chunk {
            case .deferred:
                return ssize_t(NGHTTP2_ERR_DEFERRED.rawValue)
            case .bytes(let count, let end, let trailers):
                if end { flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                if trailers { flags!.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue }
                return count
            }
        }
    )

    /// Lays header fields out as `nghttp2_nv`s over one buffer for the length of `body`.
    /// Both live in temporary allocations (on the stack when small): nghttp2 copies what it
    /// is given before the submit call returns.
    private static func withHeaderFields<T>(
        _ headers: [(name: String, value: String)], _ body: (UnsafeMutableBufferPointer<nghttp2_nv>) -> T
    ) -> T {
        let byteCount = headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(byteCount, 1)) { bytes in
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(headers.count, 1)) { fields in
                var offset = 0
                func place(_ text: String) -> (UnsafeMutablePointer<UInt8>, Int) {
                    let start = bytes.baseAddress! + offset
                    let count = UnsafeMutableBufferPointer(rebasing: bytes[offset...]).initialize(fromContentsOf: text.utf8)
                    offset += count
                    return (start, count)
                }
                for (index, header) in headers.enumerated() {
                    let (name, nameCount) = place(header.name)
                    let (value, valueCount) = place(header.value)
                    (fields.baseAddress! + index).initialize(
                        to: nghttp2_nv(
                            name: name, value: value, namelen: nameCount, valuelen: valueCount,
                            flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
                        ))
                }
                return body(UnsafeMutableBufferPointer(rebasing: fields[..<headers.count]))
            }
        }
    }
}

/// The session a callback's `user_data` points to.
private func owningSession(_ user: UnsafeMutableRawPointer?) -> NGHTTP2Session {
    Unmanaged<NGHTTP2Session>.fromOpaque(user!).takeUnretainedValue()
}
