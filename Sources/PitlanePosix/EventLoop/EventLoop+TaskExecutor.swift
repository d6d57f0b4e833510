/// An event loop runs Swift tasks too: a server runs each RPC's handler on its connection's
/// loop, so a response travels from the handler to the socket without a thread hop, and many
/// responses written at once leave in one socket write.
extension EventLoop: TaskExecutor {
    /// Queues `job` to run on the loop's thread; a job queued after the loop has shut down is dropped and never runs.
    public func enqueue(_ job: consuming ExecutorJob) {
        _ = inbox.enqueue(.job(UnownedJob(job)), fromLoop: inEventLoop)
    }

    /// The loop as an unowned task executor, for the Swift runtime.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
