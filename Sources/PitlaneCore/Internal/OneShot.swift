import Synchronization

/// A value set once by one task (or event loop) and awaited by another; shared with the
/// transports in this package.
package final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiter: CheckedContinuation<Value, any Error>?
    }

    private let state = Mutex(State())

    package init() {}

    package func fulfil(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    /// Waits for the value; throws `CancellationError` if the waiting task is cancelled.
    package func value() async throws -> Value {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<Value, any Error>? = state.withLock { state in
                    if let value = state.value { return .success(value) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }?.resume(throwing: CancellationError())
        }
    }
}
