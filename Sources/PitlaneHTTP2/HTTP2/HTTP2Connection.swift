/// What the two sides of an HTTP/2 connection do alike, written once: reading the socket into
/// the nghttp2 session, flushing the session's output (never while nghttp2 is inside a
/// read, one flush at a time, and deferred to the end of the loop's batch so that many writes
/// leave in one), and giving window back as a reader takes messages.
///
/// ``HTTP2ServerConnection`` and ``HTTP2ClientConnection`` supply the parts and decide what
/// follows a write (a draining server may linger; a finished client closes). Everything here
/// runs on the connection's loop.
///
/// The pump and the gate are objects of their own, not stored structs the protocol's
/// accessors would yield: unspecialized (debug builds), every such access allocated a
/// coroutine frame, dozens per RPC. And they are two on purpose: nghttp2's callbacks reach
/// the gate (a stream closing asks for a flush) while the pump is in the middle of a read.
protocol HTTP2Connection: FileDescriptorHandler {
    var loop: EventLoop { get }
    var socket: Socket { get }
    var session: NGHTTP2Session { get }
    var pump: SessionPump { get }
    var flushGate: FlushGate { get }
    /// Whether the session's frames may be written now: not before the socket connects, not
    /// once the connection lingers or has closed.
    var writesFrames: Bool { get }
    /// A write went out (or the socket filled): the connection checks whether it is done.
    func wrote()
    /// Writing to the socket failed: the connection closes.
    func writeFailed(_ error: any Error)
}

extension HTTP2Connection {
    /// Reads what the socket has into the session, with flushing held off meanwhile.
    func receive() -> SessionPump.ReadOutcome {
        flushGate.beginReceiving()
        defer { flushGate.endReceiving() }
        return pump.read(from: socket, into: session, through: loop.readBuffer)
    }

    /// Writes what nghttp2 has to send; waits for writability when the socket is full.
    func flush() {
        guard writesFrames, flushGate.startFlush() else { return }
        repeat {
            flushOnce()
        } while flushGate.flushAgain(unlessClosed: !writesFrames)
    }

    private func flushOnce() {
        guard writesFrames else { return }
        do {
            try pump.write(from: session, to: socket, loop: loop)
        } catch {
            return writeFailed(error)
        }
        if pump.takeResumeReading() { loop.executeLater { [self] in readable() } }
        wrote()
    }

    /// Flushes once the tasks queued so far have run: responses many handlers write at the
    /// same moment (a race tick to every follower), or a request's headers, message and end,
    /// leave in one socket write, not one each.
    func scheduleFlush() {
        guard let deferredFlush = flushGate.deferredFlush, flushGate.deferFlush() else { return }
        loop.executeLater(deferredFlush)
    }

    /// Makes the closure ``scheduleFlush()`` queues, once per connection; the connection
    /// calls it as it starts and ``disarmDeferredFlush()`` when it closes (one never started
    /// holds no cycle).
    func armDeferredFlush() {
        flushGate.deferredFlush = { [self] in
            flushGate.deferredFlushRuns()
            flush()
        }
    }

    /// Breaks the cycle the deferred flush makes (the connection holds it, it holds the
    /// connection); a flush already queued still runs, and finds the connection closed.
    func disarmDeferredFlush() {
        flushGate.deferredFlush = nil
    }

    /// A stream's reader took messages whose `count` bytes of window may go back now.
    func returnWindow(_ count: Int, stream id: Int32) {
        guard count > 0 else { return }
        session.consume(stream: id, bytes: count)
        flush()
    }

    /// A stream closed with `outstanding` bytes of window its reader never took: they go back
    /// to the connection, or its window would shrink for good.
    func returnConnectionWindow(_ outstanding: Int) {
        if outstanding > 0 { session.consumeConnection(bytes: outstanding) }
    }
}
