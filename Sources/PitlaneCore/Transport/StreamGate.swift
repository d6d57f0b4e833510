import Synchronization

/// A client transport's open streams and its graceful shutdown: streams open until
/// shutdown begins, and `waitUntilDrained()` (what `connect()` awaits) returns once shutdown
/// has begun and the last stream has closed. Shared by the transports in this package.
package final class StreamGate: Sendable {
    private struct State {
        var shuttingDown = false
        var openStreams = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let name: String

    /// - Parameter name: names the transport in the error a refused stream gets.
    package init(name: String) {
        self.name = name
    }

    /// Counts a new stream; fails with `.unavailable` once shutdown has begun.
    package func open() throws {
        try state.withLock { state in
            guard !state.shuttingDown else { throw RPCError(code: .unavailable, message: "the \(name) is shutting down") }
            state.openStreams += 1
        }
    }

    package func close() {
        resume(
            state.withLock { state in
                state.openStreams -= 1
                return drainedWaiters(&state)
            })
    }

    package func beginShutdown() {
        resume(
            state.withLock { state in
                state.shuttingDown = true
                return drainedWaiters(&state)
            })
    }

    package func waitUntilDrained() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.shuttingDown && state.openStreams == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func drainedWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard state.shuttingDown && state.openStreams == 0 else { return [] }
        defer { state.waiters = [] }
        return state.waiters
    }

    private func resume(_ waiters: [CheckedContinuation<Void, Never>]) {
        for waiter in waiters { waiter.resume() }
    }
}
