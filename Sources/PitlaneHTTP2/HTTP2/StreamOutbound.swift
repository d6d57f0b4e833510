import PitlaneCore
import Synchronization

/// The bytes a stream's writers (a handler or client task; a WebSocket's several senders)
/// have queued for its connection's event loop, and the backpressure between them: writers
/// wait while more than `highWatermark` bytes are queued, and the loop resumes them as it
/// sends.
///
/// It also counts an RPC's message bytes on the wire both ways, for metrics (its
/// ``MessageWireCounts``, handed to the core in ``RPCStream/wireCounts``): one object per
/// stream already, so the counts cost no allocation.
package final class StreamOutbound: LoopTaskCounter {
    private struct State {
        var queuedBytes = 0
        var closed: RPCError?
        /// Usually one; more when several tasks write to one WebSocket.
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter = 0
        /// Run once the queue is at most at the watermark; see ``whenReady(on:_:)``.
        var readyCallbacks: [@Sendable () -> Void] = []

        mutating func takeWaiters() -> [CheckedContinuation<Void, any Error>] {
            guard !waiters.isEmpty else { return [] }
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }

        mutating func takeReadyCallbacks() -> [@Sendable () -> Void] {
            guard !readyCallbacks.isEmpty else { return [] }
            defer { readyCallbacks.removeAll() }
            return readyCallbacks
        }
    }

    private let state = Mutex(State())
    private let highWatermark: Int
    /// Writes queued on the loop and not yet run there; see ``onLoop(_:_:)``.
    private let hopsInFlight = Atomic(0)
    /// Message bytes sent as framed (each length prefix's value). Added to under `state`'s
    /// lock, which `enqueue` takes anyway, so a load and a store suffice; read without it.
    private let sentWire = Atomic(0)
    /// Message bytes received as framed. Added to on the stream's event loop only (where
    /// messages are unframed), so a load and a store suffice; read from any thread.
    private let receivedWire = Atomic(0)

    package init(highWatermark: Int) {
        self.highWatermark = highWatermark
    }

    /// Runs a writer's `body` (a part for the connection) on `loop`: right here when the
    /// writer already runs there (handlers or calls on the event loops) and nothing it wrote
    /// earlier is still on its way, so parts stay in order; otherwise as a task queued on
    /// the loop. The one hop onto the loop for every stream's writer, server and client.
    @inline(__always)
    package func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable () -> Void) {
        if loop.inEventLoop && hopsInFlight.load(ordering: .acquiring) == 0 {
            return body()
        }
        hopsInFlight.add(1, ordering: .relaxed)
        loop.execute(body, counting: self)
    }

    /// A hop queued by ``onLoop(_:_:)`` has run.
    package func taskRan() {
        hopsInFlight.subtract(1, ordering: .releasing)
    }

    /// Counts `bytes` as queued, then waits while the queue is above the watermark.
    /// `wireBytes`: the message's size on the wire, when `bytes` frame one (its length prefix:
    /// after compression, without the prefix or base64).
    ///
    /// Inlined into its callers, and the waiting a call of its own: a writer's task allocates
    /// the frame of the wait only when it waits, and the deepest frames of a stream's task
    /// are what it keeps allocated while idle.
    @inline(__always)
    package nonisolated(nonsending) func enqueue(_ bytes: Int, wireBytes: Int = 0, then send: () -> Void) async throws {
        // Below the watermark (the usual case) the writer goes on without suspending.
        if try enqueueNow(bytes, wireBytes: wireBytes, then: send) { try await waitForRoom() }
    }

    /// Counts `bytes` as queued and runs `send`; true when the queue is then above the
    /// watermark.
    private func enqueueNow(_ bytes: Int, wireBytes: Int, then send: () -> Void) throws -> Bool {
        try state.withLock { state in
            if let closed = state.closed { throw closed }
            count(bytes, wireBytes: wireBytes, in: &state)
        }
        send()
        return try state.withLock { state in
            if let closed = state.closed { throw closed }
            return state.queuedBytes > highWatermark
        }
    }

    /// Waits until the queue is at most at the watermark.
    @inline(never)
    nonisolated(nonsending) private func waitForRoom() async throws {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready: Result<Void, any Error>? = state.withLock { state in
                    if let closed = state.closed { return .failure(closed) }
                    if state.queuedBytes <= highWatermark { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    /// Counts `bytes` as queued if the stream is open and its queue is at most at the
    /// watermark (as ``enqueue(_:wireBytes:then:)`` would go on without waiting); false, and
    /// nothing counted, otherwise.
    package func tryEnqueue(_ bytes: Int, wireBytes: Int) -> Bool {
        state.withLock { state in
            guard state.closed == nil, state.queuedBytes <= highWatermark else { return false }
            count(bytes, wireBytes: wireBytes, in: &state)
            return true
        }
    }

    /// Counts `bytes` as queued whatever the queue holds, if the stream is open: for a part
    /// that must follow the queued ones (a status) from a writer that cannot wait; false, and
    /// nothing counted, once the stream is closed.
    package func enqueueRegardless(_ bytes: Int) -> Bool {
        state.withLock { state in
            guard state.closed == nil else { return false }
            count(bytes, wireBytes: 0, in: &state)
            return true
        }
    }

    /// Counts `bytes` as queued and `wireBytes` as sent; under `state`'s lock.
    private func count(_ bytes: Int, wireBytes: Int, in state: inout State) {
        state.queuedBytes += bytes
        if wireBytes > 0 { sentWire.store(sentWire.load(ordering: .relaxed) + wireBytes, ordering: .relaxed) }
    }

    /// Runs `body` as a task of `loop` once the queue is at most at the watermark (soon, if
    /// it is now): the moment a writer that used ``tryEnqueue(_:wireBytes:)`` waits for
    /// without a task. Never from within this call nor the loop's sending, so `body` may take
    /// a lock its caller holds, or write again. False, and `body` never runs, once the stream
    /// is closed; dropped if it closes first.
    package func whenReady(on loop: EventLoop, _ body: @escaping @Sendable () -> Void) -> Bool {
        let readyNow = state.withLock { state -> Bool? in
            if state.closed != nil { return nil }
            if state.queuedBytes <= highWatermark { return true }
            state.readyCallbacks.append { loop.execute(body) }
            return false
        }
        guard let readyNow else { return false }
        if readyNow { loop.execute(body) }
        return true
    }

    /// The loop sent `bytes`; wakes the writers once the queue is below the watermark.
    package func sent(_ bytes: Int) {
        let (waiters, callbacks) = state.withLock { state -> ([CheckedContinuation<Void, any Error>], [@Sendable () -> Void]) in
            state.queuedBytes -= bytes
            guard state.queuedBytes <= highWatermark else { return ([], []) }
            return (state.takeWaiters(), state.takeReadyCallbacks())
        }
        for waiter in waiters { waiter.resume() }
        for callback in callbacks { callback() }
    }

    /// The stream is gone (reset, or the connection closed): writers fail with `error`.
    package func close(_ error: RPCError) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            if state.closed == nil { state.closed = error }
            state.readyCallbacks.removeAll()
            return state.takeWaiters()
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }
}

extension StreamOutbound: MessageWireCounts {
    package var sentMessageWireBytes: Int { sentWire.load(ordering: .relaxed) }
    package var receivedMessageWireBytes: Int { receivedWire.load(ordering: .relaxed) }

    /// A message of `wireBytes` bytes arrived (its length prefix's value: before
    /// decompression). On the stream's event loop only.
    package func receivedMessage(wireBytes: Int) {
        receivedWire.store(receivedWire.load(ordering: .relaxed) + wireBytes, ordering: .relaxed)
    }
}

/// Data waiting on the event loop for nghttp2 to frame it: whole bodies' bytes, read front
/// first (an envelope's prefix is written as it is read, so a shared message is not copied
/// until it goes into a frame). The front chunk is held inline: a stream that is keeping up
/// has at most one, and then its queue allocates nothing.
package struct PendingData {
    private var front: BodyBytes?
    /// Chunks after `front`; empty while `front` is nil.
    private var rest = Deque<BodyBytes>()
    /// Bytes of `front` already read.
    private var offset = 0
    private(set) var count = 0

    package var isEmpty: Bool { count == 0 }

    package mutating func append(_ bytes: BodyBytes) {
        guard !bytes.isEmpty else { return }
        if front == nil {
            front = bytes
        } else {
            rest.append(bytes)
        }
        count += bytes.count
    }

    /// Copies up to `buffer.count` bytes out; returns how many.
    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var written = 0
        while written < buffer.count, let chunk = front {
            let take = chunk.copy(from: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[written...]))
            written += take
            offset += take
            if offset == chunk.count {
                front = rest.popFirst()
                offset = 0
            }
        }
        count -= written
        return written
    }
}
