/// An event loop runs Swift tasks too: a server runs each RPC's handler on its connection's
/// loop, so a response travels from the handler to the socket without a thread hop, and many
/// responses written at once leave in one socket write.
extension EventLoop: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        _ = inbox.enqueue(.job(UnownedJob(job)), fromLoop: inEventLoop)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
