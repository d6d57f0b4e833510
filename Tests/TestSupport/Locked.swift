import Synchronization

/// A `Mutex` that escaping closures can share: tests record from the loop thread and read
/// back on the test's.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    public func withLock<Result: Sendable>(_ body: (inout sending Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }

    public var value: Value {
        get { withLock { $0 } }
        set { withLock { $0 = newValue } }
    }
}
