/// Continues a partly read async sequence: iterating it resumes the iterator it holds.
///
/// It may be iterated once. `@unchecked Sendable`: the iterator moves to the one task that
/// iterates the sequence and no other task touches it, which is how every RPC stream is read.
struct IteratorSequence<Base: AsyncIteratorProtocol>: AsyncSequence, @unchecked Sendable where Base.Element: Sendable {
    typealias Element = Base.Element
    let iterator: Base

    func makeAsyncIterator() -> Base { iterator }
}

/// Runs `operation` and fails it with `.deadlineExceeded` (cancelling it) if `deadline`
/// passes first. The operation runs in a child task, so the caller's own task is never
/// cancelled; the timer is freed as soon as the operation returns. `onExpiry` runs when the
/// deadline passes, just before the cancellation.
func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant, on timeSource: TimeSource,
    onExpiry: @escaping @Sendable () -> Void = {},
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        let handle = RPCCancellationHandle()
        group.addTask {
            let result = await handle.runReturning { () async -> Result<T, any Error> in
                do { return .success(try await operation()) } catch { return .failure(error) }
            }
            if case .failure = result, handle.isDeadlineExceeded {
                throw RPCError(code: .deadlineExceeded, message: "the deadline passed before the RPC finished")
            }
            return try result.get()
        }
        let timer = timeSource.schedule(at: deadline) {
            onExpiry()
            handle.expireDeadline()
        }
        defer { timer.cancel() }
        return try await group.next()!
    }
}
