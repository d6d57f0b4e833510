import PitlaneCore

/// Flow-control accounting for one stream's received DATA.
///
/// Window goes back to the peer in two ways. Bytes of a message still being assembled go
/// back at once: a message may be larger than the window, and its size is already bounded by
/// the message limit. A complete message's bytes go back only when the reader takes it, so a
/// slow reader stops the peer after one window of complete messages.
struct InboundWindow {
    /// Bytes owed back per complete message, in the order the reader will take them.
    private var owedOnRead = Deque<Int>()
    /// Bytes of the message being assembled that went back early.
    private var returnedEarly = 0
    /// Bytes received and not yet returned: what to return at the connection level if the
    /// stream closes first.
    private(set) var outstanding = 0

    mutating func received(_ count: Int) {
        outstanding += count
    }

    /// A message of `size` bytes (prefix included) is complete and handed to the reader.
    mutating func completed(messageOfSize size: Int) {
        owedOnRead.append(size - returnedEarly)
        returnedEarly = 0
    }

    /// Bytes to return now for the incomplete message, which holds `buffered` bytes.
    mutating func returnPartial(buffered: Int) -> Int {
        let count = Swift.max(0, buffered - returnedEarly)
        returnedEarly = buffered
        outstanding -= count
        return count
    }

    /// The reader took a message: bytes to return now.
    mutating func read() -> Int {
        let count = owedOnRead.popFirst() ?? 0
        outstanding -= count
        return count
    }
}
