/// A value kept on the heap, so a message can hold a field of its own type.
///
/// Generated code stores singular message fields that lead back to their own message as
/// `Boxed<Child>?`; the public accessor reads and writes `Child` as usual. Boxes are
/// immutable and shared, so copying a message stays cheap and value semantics hold.
public indirect enum Boxed<Value: Hashable & Sendable>: Hashable, Sendable {
    /// The only case: the box and the value it holds.
    case value(Value)

    /// Puts `value` in a new box.
    @inlinable
    public init(_ value: Value) {
        self = .value(value)
    }

    /// The boxed value.
    @inlinable
    public var value: Value {
        switch self {
        case .value(let value): value
        }
    }
}
