/// Told, on the loop, each time a task queued with ``EventLoop/execute(_:counting:)`` has
/// run.
public protocol LoopTaskCounter: AnyObject, Sendable {
    /// A task counted here has run; on the loop.
    func taskRan()
}
