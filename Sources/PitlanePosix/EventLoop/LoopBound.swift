/// A loop-owned value that other threads may carry but not touch: it is opened only on its
/// loop, which debug builds check at every ``value`` (NIO's `NIOLoopBound` is the model).
/// Release builds pay nothing for the check.
///
/// A connection lives on one loop; the transport keeps its connections in a table that any
/// thread may read, and reaches each through ``execute(_:)``:
///
/// ```swift
/// let bound = LoopBound(connection, loop: connection.loop)   // made on the loop
/// bound.execute { $0.drain() }                                 // from any thread
/// ```
///
/// `@unchecked Sendable`: the value crosses threads inside it, and is touched only on `loop`,
/// which every access asserts in debug builds.
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop that owns the value.
    public let loop: EventLoop
    @usableFromInline let wrapped: Value

    /// Wraps `value`, owned by `loop`.
    public init(_ value: Value, loop: EventLoop) {
        self.loop = loop
        wrapped = value
    }

    /// The value; on its loop only.
    @inlinable
    public var value: Value {
        loop.assertInEventLoop()
        return wrapped
    }

    /// Runs `body` with the value on its loop; safe from any thread.
    public func execute(_ body: @escaping @Sendable (Value) -> Void) {
        let bound = self
        loop.execute { body(bound.value) }
    }
}

extension EventLoop {
    /// In debug builds, stops the program unless called on this loop's thread; in release
    /// builds, nothing. For code that loop-owned state reaches, where a wrong thread is a bug
    /// to find in tests rather than a condition to handle.
    @inlinable
    public func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inEventLoop, "must be called on event loop \(name)", file: file, line: line)
    }
}
