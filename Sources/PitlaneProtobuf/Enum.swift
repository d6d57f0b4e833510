/// A generated protobuf enum.
///
/// Open enums (proto3, editions' `OPEN`) have an `UNRECOGNIZED(Int)` case that keeps
/// values this schema does not name; closed enums do not, and an unknown value read
/// from the wire goes to the message's unknown fields instead.
public protocol ProtoEnum: RawRepresentable, Hashable, Sendable, CaseIterable where RawValue == Int {
    /// The enum's value for the number, or nil for a closed enum that does not name it.
    init?(rawValue: Int)
    /// The value an unset field reads as: the first value declared.
    init()
    /// The protobuf name of each named value, for JSON and debugging.
    var protoName: String? { get }
    /// Maps a protobuf value name back to the enum; nil when the name is unknown.
    init?(protoName: String)
}
