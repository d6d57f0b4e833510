import Synchronization

/// Request messages kept so a retried or hedged attempt can send them again.
///
/// The producer appends; each attempt reads from the start at its own pace. While everything
/// written fits in `limit` bytes the request stays replayable. Past that, no new attempt may
/// start: the buffer keeps only what the newest attempt has yet to read, and the producer
/// waits while that exceeds the limit, so memory stays bounded either way.
final class ReplayBuffer<Element: Sendable>: Sendable {
    private struct State {
        var elements = Deque<(Element, Int)>()
        /// The absolute index of `elements`' first entry (elements before it were dropped).
        var firstIndex = 0
        var bufferedBytes = 0
        var totalBytes = 0
        var end: Result<Void, any Error>?
        var replayable = true
        var readers: [Int: CheckedContinuation<Void, Never>] = [:]
        var producer: CheckedContinuation<Void, Never>?
        var newestReaderIndex = 0
        var nextWaiter = 0
    }

    private enum Next {
        case element(Element)
        case end(Result<Void, any Error>)
        case wait(Int)
    }

    private let state = Mutex(State())
    private let limit: Int
    private let sizeOf: @Sendable (Element) -> Int

    init(limit: Int, sizeOf: @escaping @Sendable (Element) -> Int) {
        self.limit = limit
        self.sizeOf = sizeOf
    }

    /// Whether a new attempt can still send the whole request.
    var isReplayable: Bool { state.withLock { $0.replayable } }

    /// Stops retaining for replay: the call is committed to one attempt.
    func commit() {
        let producer = state.withLock { state in
            state.replayable = false
            trimRead(&state)
            defer { state.producer = nil }
            return state.producer
        }
        producer?.resume()
    }

    func append(_ element: Element) async {
        let size = sizeOf(element)
        let waiters = state.withLock { state in
            state.elements.append((element, size))
            state.bufferedBytes += size
            state.totalBytes += size
            if state.totalBytes > limit { state.replayable = false }
            defer { state.readers = [:] }
            return Array(state.readers.values)
        }
        for waiter in waiters { waiter.resume() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wait = state.withLock { state in
                    guard !state.replayable, state.bufferedBytes > limit, !Task.isCancelled else { return false }
                    state.producer = continuation
                    return true
                }
                if !wait { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.producer = nil }
                return state.producer
            }?.resume()
        }
    }

    func finish(_ end: Result<Void, any Error>) {
        let waiters = state.withLock { state in
            state.end = end
            defer { state.readers = [:] }
            return Array(state.readers.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The element at `index` for an attempt reading from the start; nil at the end.
    func element(at index: Int) async throws -> Element? {
        while true {
            let (next, producer): (Next, CheckedContinuation<Void, Never>?) = state.withLock { state in
                // Trimmed away: another attempt was committed and this one is being cancelled.
                guard index >= state.firstIndex else {
                    return (.end(.failure(RPCError(code: .cancelled, message: "another attempt was committed"))), nil)
                }
                state.newestReaderIndex = index
                if index - state.firstIndex < state.elements.count {
                    let element = state.elements[index - state.firstIndex].0
                    var producer: CheckedContinuation<Void, Never>?
                    if !state.replayable {
                        trimRead(&state)
                        if state.bufferedBytes <= limit {
                            producer = state.producer
                            state.producer = nil
                        }
                    }
                    return (.element(element), producer)
                }
                if let end = state.end { return (.end(end), nil) }
                defer { state.nextWaiter += 1 }
                return (.wait(state.nextWaiter), nil)
            }
            producer?.resume()
            switch next {
            case .element(let element): return element
            case .end(let end):
                try end.get()
                return nil
            case .wait(let id):
                try await waitForProducer(readerID: id, index: index)
            }
        }
    }

    private func waitForProducer(readerID id: Int, index: Int) async throws {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if index - state.firstIndex < state.elements.count || state.end != nil || Task.isCancelled {
                        return true
                    }
                    state.readers[id] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.readers.removeValue(forKey: id) }?.resume()
        }
        try Task.checkCancellation()
    }

    /// Drops elements the newest reader has passed (only once replay is off).
    private func trimRead(_ state: inout State) {
        while state.firstIndex < state.newestReaderIndex, let (_, size) = state.elements.popFirst() {
            state.firstIndex += 1
            state.bufferedBytes -= size
        }
    }
}
