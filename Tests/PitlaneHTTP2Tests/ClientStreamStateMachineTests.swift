import Testing

@testable import PitlaneHTTP2

/// A client stream's life on its own: every transition of `ClientStreamStateMachine`, with no
/// connection, socket or nghttp2.
@Suite("Client stream state machine", .timeLimit(.minutes(1)))
struct ClientStreamStateMachineTests {
    typealias Machine = ClientStreamStateMachine

    func read(_ stream: inout Machine, size: Int = 64) -> (bytes: [UInt8], step: OutgoingBody.Step) {
        var buffer = [UInt8](repeating: 0, count: size)
        let (count, step) = buffer.withUnsafeMutableBytes { stream.readData(into: $0) }
        return (Array(buffer[0..<count]), step)
    }

    @Test("idle until opened; the response reaches the reader while open; its status finishes it, and a later failure is not reported")
    func life() throws {
        var stream = Machine()
        #expect(stream.state == .idle && stream.id == nil && !stream.deliversResponse)
        try stream.opened(id: 1)
        #expect(stream.state == .open(id: 1) && stream.id == 1 && stream.deliversResponse)
        stream.responseEnded()
        #expect(stream.state == .finished(id: 1) && !stream.deliversResponse)
        #expect(stream.failed() == false)  // the reader has its status already
        #expect(stream.id == 1)  // nghttp2 may still know it: a release resets it
    }

    @Test("a failure is reported once: before the stream opened, or while it is open")
    func failures() throws {
        var unopened = Machine()
        #expect(unopened.failed() == true)
        #expect(unopened.state == .finished(id: nil))
        #expect(unopened.failed() == false)

        var open = Machine()
        try open.opened(id: 3)
        #expect(open.failed() == true)
        #expect(open.state == .finished(id: 3))
        open.responseEnded()  // a status after the failure changes nothing
        #expect(open.state == .finished(id: 3))
    }

    @Test("opening twice is a violation, reported with the state")
    func openedTwice() throws {
        var stream = Machine()
        try stream.opened(id: 5)
        #expect(throws: Machine.Violation(event: "opening as stream 7", state: .open(id: 5))) { try stream.opened(id: 7) }
    }

    @Test(
        "request data queued before the stream opened needs no resume; nghttp2 parked on an open stream is resumed once; the end is END_STREAM"
    )
    func requestBody() throws {
        var stream = Machine()
        #expect(stream.requestData(BodyBytes([1, 2])) == false)  // not open: nghttp2 is not waiting
        try stream.opened(id: 1)
        #expect(read(&stream).bytes == [1, 2])
        #expect(read(&stream).step.isDeferred)  // nothing more yet: parked
        #expect(stream.requestData(BodyBytes([3])) == true)  // resume, once
        #expect(stream.requestEnded() == false)  // resumed already
        let last = read(&stream)
        #expect(last.bytes == [3])
        guard case .end(.endStream) = last.step else {
            Issue.record("not END_STREAM: \(last.step)")
            return
        }
    }

    @Test("an end queued while nghttp2 is parked resumes it")
    func endWhileParked() throws {
        var stream = Machine()
        try stream.opened(id: 1)
        #expect(read(&stream).step.isDeferred)
        #expect(stream.requestEnded() == true)
        guard case .end(.endStream) = read(&stream).step else {
            Issue.record("not END_STREAM")
            return
        }
    }
}
