/// When a connection may write: not while nghttp2 is handling received bytes (its callbacks
/// ask to flush; the read flushes once it is done), and one flush at a time (a flush asked
/// for during one — nghttp2 closing a stream as it writes, say — runs once more after it).
///
/// Apart from the ``SessionPump`` on purpose: nghttp2's callbacks reach the gate while the
/// pump is in the middle of a read.
///
/// A flush may also be deferred to the end of the loop's current batch of tasks
/// (``deferFlush()``), so that responses many handlers write at once leave in one write.
final class FlushGate {
    private var receiving = false
    private var flushing = false
    private var again = false
    private var deferred = false
    /// The connection's deferred flush, made once when the connection is (a closure made per
    /// deferral was an allocation per response); nil once it closes, since the closure holds
    /// the connection. See ``HTTP2Connection/armDeferredFlush()``.
    var deferredFlush: (() -> Void)?

    /// Asks for a flush after the tasks queued so far; true when the caller must queue it
    /// (none is queued yet), false when one is queued already.
    func deferFlush() -> Bool {
        guard !deferred else { return false }
        deferred = true
        return true
    }

    /// The deferred flush runs now.
    func deferredFlushRuns() { deferred = false }

    /// Bytes are being handed to nghttp2.
    func beginReceiving() { receiving = true }

    func endReceiving() { receiving = false }

    /// Whether to flush now; false while receiving, or while a flush runs (which then runs again).
    func startFlush() -> Bool {
        guard !receiving else { return false }
        guard !flushing else {
            again = true
            return false
        }
        flushing = true
        again = false
        return true
    }

    /// After a round of flushing: whether to run another (one was asked for meanwhile, and the
    /// connection is not `closed`); when not, the flush is over.
    func flushAgain(unlessClosed closed: Bool) -> Bool {
        if again && !closed {
            again = false
            return true
        }
        flushing = false
        again = false
        return false
    }
}
