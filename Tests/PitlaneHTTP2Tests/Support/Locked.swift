import Synchronization

/// A `Mutex` that escaping closures can share: tests record from the loop thread and read
/// back on the test's.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func withLock<Result: Sendable>(_ body: (inout sending Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }

    var value: Value { withLock { $0 } }
}
