/// Protobuf editions features after resolution: the edition's defaults, then the file's,
/// each enclosing message's and the element's own overrides.
struct Features {
    enum Presence { case explicit, implicit, required }

    var presence: Presence
    var closedEnums: Bool
    var packed: Bool
    var verifyUTF8: Bool
    var delimited: Bool

    /// Defaults per edition, as `google/protobuf/descriptor.proto` declares them.
    static func defaults(for edition: Edition) -> Features {
        switch edition {
        case .proto2:
            Features(presence: .explicit, closedEnums: true, packed: false, verifyUTF8: false, delimited: false)
        case .proto3:
            Features(presence: .implicit, closedEnums: false, packed: true, verifyUTF8: true, delimited: false)
        case .edition2023, .edition2024:
            Features(presence: .explicit, closedEnums: false, packed: true, verifyUTF8: true, delimited: false)
        }
    }

    /// These features with the values `set` states overriding them.
    func applying(_ set: FeatureSet) -> Features {
        var resolved = self
        switch set.fieldPresence {
        case 1: resolved.presence = .explicit
        case 2: resolved.presence = .implicit
        case 3: resolved.presence = .required
        default: break
        }
        if let enumType = set.enumType, enumType != 0 { resolved.closedEnums = enumType == 2 }
        if let encoding = set.repeatedFieldEncoding, encoding != 0 { resolved.packed = encoding == 1 }
        if let validation = set.utf8Validation, validation != 0 { resolved.verifyUTF8 = validation == 2 }
        if let encoding = set.messageEncoding, encoding != 0 { resolved.delimited = encoding == 2 }
        return resolved
    }
}
