/// The life of one stream on a server connection, from its request's first header field to
/// its close, as states; each event returns what the connection does next. Pure: no I/O, no
/// nghttp2, so every transition is tested on its own (`ServerStreamStateMachineTests`).
///
/// ```
/// receivingHeaders ──headersEnded──▶ open ──responseEnded──▶ ending ──last DATA read──▶ done
///        │                            │ ╲ (trailers-only head, reset by the server)       │
///        │                            │  ╲────────────────────────────────────────▶ done  │
///        └──────────────── closed (nghttp2 closed the stream: reset, or complete) ◀───────┘
/// ```
///
/// While `open`, the handler's response parts go out; once `ending` or `done`, later ones are
/// dropped (a handler that wrote after its deadline, or after the client reset the stream).
/// The request's side (DATA, END_STREAM) is the call's: HTTP/2 ends it once (nghttp2 checks).
struct ServerStreamStateMachine {
    enum State {
        /// The request's header fields arrive. `overLimit`: the header list passed this
        /// limit, and the request is answered, not served.
        case receivingHeaders(HTTPRequestHead, overLimit: Int?)
        /// The RPC runs: its response has not ended.
        case open
        /// The response's end is queued behind its DATA.
        case ending
        /// Nothing more goes out: the response is complete (its last DATA read, or a head that
        /// ended the stream), or the server reset the stream.
        case done
        /// nghttp2 closed the stream.
        case closed
    }

    /// An event the stream's state cannot take: a fault in the connection's code, reported and
    /// answered by resetting the stream, never a crash.
    struct Violation: Error, CustomStringConvertible, Equatable {
        let event: String
        let state: String

        var description: String { "\(event) on a stream that is \(state)" }
    }

    private(set) var state = State.receivingHeaders(HTTPRequestHead(method: "", path: "", headers: []), overLimit: nil)
    private var body = OutgoingBody()

    // MARK: The request's head

    /// One request header field; pseudo-headers go to their places (`:authority` as `host`).
    mutating func receivedHeader(name: String, value: String) {
        guard case .receivingHeaders(var head, let overLimit) = state else { return }
        state = .closed  // `head` is the only reference while it grows
        // Room for a gRPC request's usual headers at once, rather than growing 1, 2, 4, 8.
        if head.headers.capacity == 0 { head.headers.reserveCapacity(8) }
        switch name {
        case ":method": head.method = value
        case ":path": head.path = value
        case ":authority": head.headers.append(("host", value))
        case ":scheme": break
        default: head.headers.append((name, value))
        }
        state = .receivingHeaders(head, overLimit: overLimit)
    }

    /// The request's header list passed `limit` bytes: what arrived of it is dropped.
    mutating func headerListTooLarge(limit: Int) {
        guard case .receivingHeaders = state else { return }
        state = .receivingHeaders(HTTPRequestHead(method: "", path: "", headers: []), overLimit: limit)
    }

    /// What the connection does when a HEADERS block ends.
    enum OnHeadersEnded {
        /// Start the RPC for this head.
        case start(HTTPRequestHead)
        /// Answer that the header list passed `limit` (gRPC's RESOURCE_EXHAUSTED, trailers-only).
        case refuse(limit: Int)
        /// Request trailers: nothing to start.
        case none
    }

    mutating func headersEnded() -> OnHeadersEnded {
        guard case .receivingHeaders(let head, let overLimit) = state else { return .none }
        state = .open
        if let overLimit { return .refuse(limit: overLimit) }
        return .start(head)
    }

    // MARK: The response

    /// Whether the handler's parts still go out.
    var isOpen: Bool {
        if case .open = state { return true }
        return false
    }

    /// The response's head is submitted; `endsStream` for a head with no body (trailers-only).
    mutating func responseHeadSent(endsStream: Bool) throws(Violation) {
        guard case .open = state else { throw violation("a response head") }
        if endsStream { state = .done }
    }

    /// Response bytes; true when nghttp2 must be told to resume the stream's data.
    mutating func responseBody(_ bytes: BodyBytes) throws(Violation) -> Bool {
        guard case .open = state else { throw violation("response data") }
        return body.append(bytes)
    }

    /// The response ends (`trailers` empty: END_STREAM on the last DATA); true when nghttp2
    /// must be told to resume the stream's data.
    mutating func responseEnded(trailers: [(name: String, value: String)]) throws(Violation) -> Bool {
        guard case .open = state else { throw violation("the response's end") }
        state = .ending
        return body.finish(trailers.isEmpty ? .endStream : .trailers(trailers))
    }

    /// nghttp2 asks for a DATA frame's bytes.
    mutating func readData(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, step: OutgoingBody.Step) {
        switch state {
        case .open, .ending:
            let read = body.read(into: buffer)
            if case .end = read.step { state = .done }
            return read
        case .receivingHeaders, .done, .closed:
            // A stream reset while nghttp2 held a frame for it: end what nghttp2 asks for.
            return (0, .end(.endStream))
        }
    }

    // MARK: Endings

    /// The deadline passed: whether to reset the stream, because response data the client's
    /// window holds back would keep it open after the client gave up. A response whose end
    /// is queued only waits for its next flush, and is let go.
    mutating func deadlineExpired() -> Bool {
        guard case .open = state, body.hasPendingBytes else { return false }
        state = .done
        return true
    }

    /// The server resets the stream (its handler ended without a status; a head nghttp2
    /// refused): whether a reset is to be sent, false once the response has ended (its end
    /// queued or sent) or the stream has closed.
    mutating func resetByServer() -> Bool {
        switch state {
        case .receivingHeaders, .open:
            state = .done
            return true
        case .ending, .done, .closed:
            return false
        }
    }

    /// nghttp2 closed the stream, or the connection closed: whether the RPC was still
    /// running, so that its handler is cancelled and its request ends with an error.
    mutating func closed() -> Bool {
        defer { state = .closed }
        switch state {
        case .receivingHeaders, .open: return true
        case .ending, .done, .closed: return false
        }
    }

    private func violation(_ event: String) -> Violation {
        let name =
            switch state {
            case .receivingHeaders: "receiving headers"
            case .open: "open"
            case .ending: "ending"
            case .done: "done"
            case .closed: "closed"
            }
        return Violation(event: event, state: name)
    }
}
