/// `FieldDescriptorProto.Type`, with what the generator needs to know of each.
enum FieldType: Int32 {
    case double = 1
    case float, int64, uint64, int32, fixed64, fixed32, bool, string, group, message, bytes
    case uint32, enumeration, sfixed32, sfixed64, sint32, sint64

    /// The Swift type of a value, for scalar types.
    var swiftType: String {
        switch self {
        case .double: "Double"
        case .float: "Float"
        case .int64, .sint64, .sfixed64: "Int64"
        case .uint64, .fixed64: "UInt64"
        case .int32, .sint32, .sfixed32: "Int32"
        case .uint32, .fixed32: "UInt32"
        case .bool: "Bool"
        case .string: "String"
        case .bytes: "[UInt8]"
        case .group, .message, .enumeration: preconditionFailure("named types have no fixed Swift type")
        }
    }

    /// The runtime codec for scalar types (strings need the UTF-8 choice: see `FieldInfo`).
    var scalarCodec: String {
        switch self {
        case .double: "ProtoDouble"
        case .float: "ProtoFloat"
        case .int64: "ProtoInt64"
        case .uint64: "ProtoUInt64"
        case .int32: "ProtoInt32"
        case .fixed64: "ProtoFixed64"
        case .fixed32: "ProtoFixed32"
        case .bool: "ProtoBool"
        case .string: "ProtoString"
        case .bytes: "ProtoBytes"
        case .uint32: "ProtoUInt32"
        case .sfixed32: "ProtoSFixed32"
        case .sfixed64: "ProtoSFixed64"
        case .sint32: "ProtoSInt32"
        case .sint64: "ProtoSInt64"
        case .group, .message, .enumeration: preconditionFailure("named types use generic codecs")
        }
    }

    /// The wire type of one value (groups: START_GROUP).
    var wireType: UInt32 {
        switch self {
        case .double, .fixed64, .sfixed64: 1
        case .float, .fixed32, .sfixed32: 5
        case .string, .bytes, .message: 2
        case .group: 3
        default: 0
        }
    }

    /// Numbers, bools and enums: what may be packed.
    var isPackable: Bool {
        switch self {
        case .string, .bytes, .message, .group: false
        default: true
        }
    }
}
