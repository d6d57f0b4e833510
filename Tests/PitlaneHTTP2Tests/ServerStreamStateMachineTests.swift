import Testing

@testable import PitlaneHTTP2

/// A server stream's life on its own: every transition of `ServerStreamStateMachine`, with
/// no connection, socket or nghttp2.
@Suite("Server stream state machine", .timeLimit(.minutes(1)))
struct ServerStreamStateMachineTests {
    typealias Machine = ServerStreamStateMachine

    /// A machine whose request head has arrived and whose RPC has started.
    func started() -> Machine {
        var stream = Machine()
        stream.receivedHeader(name: ":method", value: "POST")
        stream.receivedHeader(name: ":path", value: "/echo.Echo/Get")
        _ = stream.headersEnded()
        return stream
    }

    /// Reads the stream's DATA as nghttp2 would, `size` bytes at a time.
    func read(_ stream: inout Machine, size: Int = 64) -> (bytes: [UInt8], step: OutgoingBody.Step) {
        var buffer = [UInt8](repeating: 0, count: size)
        let (count, step) = buffer.withUnsafeMutableBytes { stream.readData(into: $0) }
        return (Array(buffer[0..<count]), step)
    }

    func isOpen(_ stream: Machine) -> Bool { if case .open = stream.state { true } else { false } }
    func isDone(_ stream: Machine) -> Bool { if case .done = stream.state { true } else { false } }
    func isEnding(_ stream: Machine) -> Bool { if case .ending = stream.state { true } else { false } }

    @Test("headers: pseudo-headers go to their places, :authority becomes host, :scheme is dropped; the head starts the RPC")
    func headers() throws {
        var stream = Machine()
        for (name, value) in [
            (":method", "POST"), (":scheme", "http"), (":path", "/a.B/C"), (":authority", "example"),
            ("content-type", "application/grpc"), ("te", "trailers"),
        ] {
            stream.receivedHeader(name: name, value: value)
        }
        guard case .start(let head) = stream.headersEnded() else {
            Issue.record("no start")
            return
        }
        #expect(head.method == "POST" && head.path == "/a.B/C")
        #expect(head.headers.map(\.name) == ["host", "content-type", "te"])
        #expect(head.header("host") == "example")
        #expect(isOpen(stream))
        // Request trailers: a second HEADERS block starts nothing, and its fields go nowhere.
        stream.receivedHeader(name: "x-late", value: "1")
        guard case .none = stream.headersEnded() else {
            Issue.record("trailers started something")
            return
        }
        #expect(isOpen(stream))
    }

    @Test("a header list over the limit is refused with its limit, and what arrived of it is dropped")
    func headerListTooLarge() {
        var stream = Machine()
        stream.receivedHeader(name: ":path", value: "/a.B/C")
        stream.headerListTooLarge(limit: 16_384)
        stream.receivedHeader(name: "x-more", value: "1")
        guard case .refuse(let limit) = stream.headersEnded() else {
            Issue.record("not refused")
            return
        }
        #expect(limit == 16_384)
        #expect(isOpen(stream))  // open to answer
        #expect(throws: Never.self) { try stream.responseHeadSent(endsStream: true) }
        #expect(isDone(stream))
    }

    @Test("a response: head, data, trailers after the last byte; nghttp2 waits (deferred) while nothing is queued and is resumed once")
    func response() throws {
        var stream = started()
        try stream.responseHeadSent(endsStream: false)
        #expect(read(&stream).step.isDeferred)  // nothing yet: nghttp2 parks the stream
        #expect(try stream.responseBody(BodyBytes(enveloping: [1, 2, 3], flags: 0)) == true)  // resume once
        #expect(try stream.responseBody(BodyBytes([9])) == false)  // not parked any more
        #expect(try stream.responseEnded(trailers: [("grpc-status", "0")]) == false)
        #expect(isEnding(stream))
        let first = read(&stream, size: 4)
        #expect(first.bytes == [0, 0, 0, 0] && first.step.isMore)
        let rest = read(&stream)
        #expect(rest.bytes == [3, 1, 2, 3, 9])
        guard case .end(.trailers(let trailers)) = rest.step else {
            Issue.record("no trailers: \(rest.step)")
            return
        }
        #expect(trailers.map(\.name) == ["grpc-status"])
        #expect(isDone(stream))
        #expect(stream.closed() == false)  // complete: nothing to cancel
    }

    @Test("an end with no trailers is END_STREAM on the last DATA frame; an end queued while parked resumes nghttp2")
    func endStream() throws {
        var stream = started()
        try stream.responseHeadSent(endsStream: false)
        #expect(read(&stream).step.isDeferred)
        #expect(try stream.responseEnded(trailers: []) == true)
        guard case .end(.endStream) = read(&stream).step else {
            Issue.record("not END_STREAM")
            return
        }
    }

    @Test("parts after the response's end are violations, reported with the state, not crashes")
    func violations() throws {
        var stream = started()
        try stream.responseHeadSent(endsStream: false)
        _ = try stream.responseEnded(trailers: [])
        #expect(throws: Machine.Violation(event: "response data", state: "ending")) { try stream.responseBody(BodyBytes([1])) }
        #expect(throws: Machine.Violation(event: "a response head", state: "ending")) { try stream.responseHeadSent(endsStream: false) }
        var fresh = Machine()
        #expect(throws: Machine.Violation(event: "the response's end", state: "receiving headers")) {
            try fresh.responseEnded(trailers: [])
        }
        #expect(!fresh.isOpen)
    }

    @Test(
        "deadline: a response with data held back by the client's window is reset; one whose end is queued, or with nothing pending, is not"
    )
    func deadline() throws {
        var held = started()
        try held.responseHeadSent(endsStream: false)
        _ = try held.responseBody(BodyBytes([1, 2, 3]))
        #expect(held.deadlineExpired() == true)
        #expect(isDone(held))
        #expect(held.closed() == false)  // reset by the server: the RPC was ended there

        var ending = started()
        try ending.responseHeadSent(endsStream: false)
        _ = try ending.responseBody(BodyBytes([1, 2, 3]))
        _ = try ending.responseEnded(trailers: [("grpc-status", "4")])
        #expect(ending.deadlineExpired() == false)
        #expect(isEnding(ending))

        var idle = started()
        #expect(idle.deadlineExpired() == false)
        #expect(idle.isOpen)
    }

    @Test("reset by the server: from open, once; not once the response has ended or the stream closed")
    func resetByServer() throws {
        var stream = started()
        #expect(stream.resetByServer() == true)
        #expect(stream.resetByServer() == false)
        #expect(!stream.isOpen)

        var ending = started()
        try ending.responseHeadSent(endsStream: false)
        _ = try ending.responseEnded(trailers: [])
        #expect(ending.resetByServer() == false)

        var closed = started()
        _ = closed.closed()
        #expect(closed.resetByServer() == false)
    }

    @Test("closed: a running RPC is ended (its handler cancelled); a complete one is not; data asked for afterwards ends the stream")
    func closed() throws {
        var receiving = Machine()
        #expect(receiving.closed() == true)

        var running = started()
        #expect(running.closed() == true)
        #expect(running.closed() == false)  // once
        guard case .end(.endStream) = read(&running).step else {
            Issue.record("data after close")
            return
        }

        var complete = started()
        try complete.responseHeadSent(endsStream: true)
        #expect(complete.closed() == false)
    }
}

extension OutgoingBody.Step {
    var isDeferred: Bool { if case .deferred = self { true } else { false } }
    var isMore: Bool { if case .more = self { true } else { false } }
}
