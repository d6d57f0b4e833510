extension EventLoop {
    /// Runs `body` on the loop and returns its result to the calling task.
    ///
    /// The bridge from Swift concurrency to loop-confined state: sockets and handlers can be
    /// created and registered inside `body`. Cancelling the calling task does not stop
    /// `body`; once queued, it runs.
    ///
    /// ```swift
    /// let count = try await loop.submit { connections.count }  // `connections` is loop-confined
    /// ```
    ///
    /// - Throws: what `body` throws, or ``EventLoopError/shutDown`` if the loop has shut down.
    public func submit<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let queued = inbox.enqueue(
                .closure {
                    continuation.resume(with: Result { try body() })
                })
            if !queued {
                continuation.resume(throwing: EventLoopError.shutDown)
            }
        }
    }
}
