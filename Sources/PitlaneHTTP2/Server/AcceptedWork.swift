import PitlaneCore
import Synchronization

/// Work for the server's task group: an RPC, or other work a connection runs as a server
/// task (a WebSocket connection's handler).
enum AcceptedWork: Sendable {
    case rpc(loop: EventLoop, stream: ServerRPCStream, context: ServerTransportContext, cancellation: RPCCancellationHandle)
    case task(loop: EventLoop, work: @Sendable () async -> Void)
}

/// Accepted work on its way from the event loops, which never wait, to the one loop in
/// `listen` that starts a task for each. Not generic, so handing over an RPC costs no type
/// metadata lookups (an `AsyncStream` did, and a lock and allocations of its own). Its length
/// is bounded by the streams the open connections may have: each element becomes a task as
/// soon as it is taken.
final class AcceptedWorkQueue: Sendable {
    private struct State {
        var queue = Deque<AcceptedWork>()
        var reader: UnsafeContinuation<AcceptedWork?, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    /// Hands `work` over; false once the queue has finished (the work is not taken).
    func offer(_ work: AcceptedWork) -> Bool {
        let (taken, reader) = state.withLock { state -> (Bool, UnsafeContinuation<AcceptedWork?, Never>?) in
            guard !state.finished else { return (false, nil) }
            if let reader = state.reader {
                state.reader = nil
                return (true, reader)
            }
            state.queue.append(work)
            return (true, nil)
        }
        reader?.resume(returning: work)
        return taken
    }

    /// Takes no more work; what was offered before is still read.
    func finish() {
        let reader = state.withLock { state in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    /// The next work, waiting for it; nil once finished and drained, or when the reading task
    /// is cancelled (which finishes the queue). One reader at a time.
    func next() async -> AcceptedWork? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                let ready = state.withLock { state -> AcceptedWork?? in
                    if let work = state.queue.popFirst() { return .some(work) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.reader = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }
}
