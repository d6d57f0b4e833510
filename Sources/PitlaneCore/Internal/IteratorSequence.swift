/// Continues a partly read async sequence: iterating it resumes the iterator it holds.
///
/// It may be iterated once. `@unchecked Sendable`: the iterator moves to the one task that
/// iterates the sequence and no other task touches it, which is how every RPC stream is read.
struct IteratorSequence<Base: AsyncIteratorProtocol>: AsyncSequence, @unchecked Sendable where Base.Element: Sendable {
    typealias Element = Base.Element
    let iterator: Base

    func makeAsyncIterator() -> Base { iterator }
}

/// Runs `operation` and fails it with `.deadlineExceeded` (cancelling it) if `deadline` passes first.
func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(until: deadline, clock: .continuous)
            throw RPCError(code: .deadlineExceeded, message: "the deadline passed before the RPC finished")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
