/// A stream's outgoing DATA as nghttp2's data provider sees it, on either side of a
/// connection: the bytes queued, how the body ends once they are sent, and whether nghttp2 is
/// parked on `NGHTTP2_ERR_DEFERRED` waiting for more. Pure: the connection tells nghttp2 to
/// resume when ``append(_:)`` or ``finish(_:)`` says so.
struct OutgoingBody {
    /// How a body ends.
    enum End {
        /// END_STREAM on the last DATA frame.
        case endStream
        /// A HEADERS frame of trailers after the last DATA frame (gRPC's status).
        case trailers([(name: String, value: String)])
    }

    /// What to tell nghttp2 after a read.
    enum Step {
        /// More may follow; nghttp2 asks again.
        case more
        /// Nothing to send now: park the stream until it is resumed.
        case deferred
        /// The body is complete with this read.
        case end(End)
    }

    private var pending = PendingData()
    /// How the body ends once `pending` is sent; nil while more may come.
    private var end: End?
    private var deferred = false

    /// Whether bytes wait to be framed.
    var hasPendingBytes: Bool { !pending.isEmpty }
    /// Whether the body's end is queued.
    var isEnding: Bool { end != nil }

    /// Queues `bytes`; true when nghttp2 must be told to resume the stream.
    mutating func append(_ bytes: BodyBytes) -> Bool {
        pending.append(bytes)
        return takeDeferred()
    }

    /// Queues the body's end; true when nghttp2 must be told to resume the stream.
    mutating func finish(_ end: End) -> Bool {
        self.end = end
        return takeDeferred()
    }

    /// Copies what fits of the queued bytes into `buffer` for a DATA frame: how many, and
    /// what comes next.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, step: Step) {
        let count = pending.read(into: buffer)
        if pending.isEmpty, let end {
            self.end = nil
            return (count, .end(end))
        }
        if count == 0 {
            deferred = true
            return (0, .deferred)
        }
        return (count, .more)
    }

    private mutating func takeDeferred() -> Bool {
        defer { deferred = false }
        return deferred
    }
}
