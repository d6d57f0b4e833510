/// The life of one RPC attempt's stream on a client connection, as states; each event says
/// what the connection does next. Pure: no I/O, no nghttp2, so every transition is tested on
/// its own (`ClientStreamStateMachineTests`).
///
/// ```
/// idle ──opened(id)──▶ open ──status, or a failure──▶ finished
///   └───────────────── a failure before it opened ──────▶ finished
/// ```
///
/// The request's DATA and its end may be queued in any state before `finished` (a writer on
/// another thread runs ahead of the headers' submission); nghttp2 reads them once the stream
/// is open. Once `finished`, nothing more reaches the reader: late response frames are
/// dropped, and a second failure is not reported twice.
struct ClientStreamStateMachine {
    enum State: Equatable {
        /// The request's headers are not submitted yet.
        case idle
        /// Submitted as stream `id`; the response is on its way.
        case open(id: Int32)
        /// The response ended: its status arrived, or the RPC failed. `id` while nghttp2 still
        /// knows the stream.
        case finished(id: Int32?)
    }

    /// An event the stream's state cannot take, reported rather than crashing.
    struct Violation: Error, CustomStringConvertible, Equatable {
        let event: String
        let state: State

        var description: String { "\(event) on a client stream that is \(state)" }
    }

    private(set) var state = State.idle
    private var body = OutgoingBody()

    /// The stream's HTTP/2 id, once opened.
    var id: Int32? {
        switch state {
        case .idle: nil
        case .open(let id): id
        case .finished(let id): id
        }
    }

    /// Whether response frames still reach the reader.
    var deliversResponse: Bool {
        if case .open = state { return true }
        return false
    }

    /// The request's headers were submitted as stream `id`.
    mutating func opened(id: Int32) throws(Violation) {
        guard case .idle = state else { throw Violation(event: "opening as stream \(id)", state: state) }
        state = .open(id: id)
    }

    /// The response's status arrived: the reader has all of it.
    mutating func responseEnded() {
        if case .open(let id) = state { state = .finished(id: id) }
    }

    /// The RPC failed (a reset, the connection lost, a malformed response): true when the
    /// reader must be told, false when the response had ended already.
    mutating func failed() -> Bool {
        switch state {
        case .idle:
            state = .finished(id: nil)
            return true
        case .open(let id):
            state = .finished(id: id)
            return true
        case .finished:
            return false
        }
    }

    // MARK: The request's body

    /// A request message's bytes; true when nghttp2 must be told to resume the stream (it
    /// waits for data, which only an opened stream can).
    mutating func requestData(_ bytes: BodyBytes) -> Bool {
        body.append(bytes) && id != nil
    }

    /// The request is complete (END_STREAM after its data); true when nghttp2 must be told
    /// to resume the stream.
    mutating func requestEnded() -> Bool {
        body.finish(.endStream) && id != nil
    }

    /// nghttp2 asks for a DATA frame's bytes.
    mutating func readData(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, step: OutgoingBody.Step) {
        body.read(into: buffer)
    }
}
