/// The Swift spellings of one field: its types, codec, tags and default value.
extension FieldInfo {
    static let runtime = "PitlaneProtobuf."

    /// The type of one value (an element, for repeated fields).
    var valueType: String {
        if let message { return message.swiftName }
        if let enumeration { return enumeration.swiftName }
        if isMapKey && type == .string { return Self.runtime + "ProtoStringKey" }
        return type.swiftType
    }

    /// The property's type: `[T]`, `[K: V]` or `T`.
    var propertyType: String {
        if let mapEntry {
            return "[\(mapEntry.fields[0].valueType): \(mapEntry.fields[1].valueType)]"
        }
        return isRepeated ? "[\(valueType)]" : valueType
    }

    /// The runtime codec type, as an expression (`PitlaneProtobuf.ProtoInt32.self`).
    var codec: String { codecType + ".self" }

    var codecType: String {
        if let message { return Self.runtime + "ProtoMessageCodec<\(message.swiftName)>" }
        if let enumeration {
            return Self.runtime + (enumeration.closed ? "ProtoClosedEnumCodec" : "ProtoEnumCodec") + "<\(enumeration.swiftName)>"
        }
        if isMapKey && type == .string {
            return Self.runtime + (features.verifyUTF8 ? "ProtoStringKeyCodec" : "ProtoUnverifiedStringKeyCodec")
        }
        if type == .string && !features.verifyUTF8 { return Self.runtime + "ProtoUnverifiedString" }
        return Self.runtime + type.scalarCodec
    }

    /// A `string` field read without UTF-8 verification (proto2, `utf8_validation = NONE`),
    /// outside a map: its invalid bytes are kept through a round trip (`InvalidUTF8Strings`).
    var isUnverifiedString: Bool { type == .string && !features.verifyUTF8 && !isMapKey }

    /// The arguments that locate element `index` of an unverified string field's kept bytes.
    func unverifiedArguments(index: String? = nil) -> String {
        "fieldNumber: \(number)" + (index.map { ", index: " + $0 } ?? "")
    }

    /// The tag of one unpacked value.
    var tag: UInt32 {
        UInt32(number) << 3 | (isGroup ? 3 : type.wireType)
    }

    /// The tag of a packed run, or of a map entry.
    var lengthDelimitedTag: UInt32 { UInt32(number) << 3 | 2 }

    var tagSize: Int {
        var size = 1
        var rest = tag >> 7
        while rest > 0 {
            size += 1
            rest >>= 7
        }
        return size
    }

    /// The storage property: `_name` for optional storage, the property itself otherwise.
    var storageName: String { hasPresence ? "_" + propertyName : SwiftNaming.escaped(propertyName) }

    /// The storage's Swift type.
    var storageType: String {
        guard hasPresence else { return propertyType }
        return isIndirect ? "\(Self.runtime)Boxed<\(valueType)>?" : "\(valueType)?"
    }

    var isClosedEnum: Bool { enumeration?.closed ?? false }

    /// What an unset field reads as.
    var defaultValue: String {
        if isRepeated { return mapEntry == nil ? "[]" : "[:]" }
        if let message { return "\(message.swiftName)()" }
        if let enumeration {
            if let literal = descriptor.defaultValue,
                let match = enumeration.cases.first(where: { $0.protoName == literal })
            {
                return "\(enumeration.swiftName).\(SwiftNaming.escaped(match.caseName))"
            }
            return "\(enumeration.swiftName)()"
        }
        guard let literal = descriptor.defaultValue else {
            switch type {
            case .bool: return "false"
            case .string: return "\"\""
            case .bytes: return "[]"
            default: return "0"
            }
        }
        switch type {
        case .string: return SwiftNaming.stringLiteral(literal)
        case .bytes: return "[" + unescapeCBytes(literal).map(String.init).joined(separator: ", ") + "]"
        case .bool: return literal
        case .float, .double:
            switch literal {
            case "inf": return ".infinity"
            case "-inf": return "-.infinity"
            case "nan": return ".nan"
            default: return literal
            }
        default: return literal
        }
    }

    /// The condition under which an implicit-presence field is written: not its default.
    func isNonDefault(_ value: String) -> String {
        if enumeration != nil { return "\(value).rawValue != 0" }
        switch type {
        case .bool: return value
        case .string, .bytes: return "!\(value).isEmpty"
        case .float, .double: return "\(value).bitPattern != 0"
        default: return "\(value) != 0"
        }
    }
}

/// Decodes the C escapes protoc uses for `bytes` default values.
func unescapeCBytes(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var input = Array(text.utf8)[...]
    while let byte = input.popFirst() {
        guard byte == UInt8(ascii: "\\"), let next = input.popFirst() else {
            bytes.append(byte)
            continue
        }
        switch next {
        case UInt8(ascii: "n"): bytes.append(10)
        case UInt8(ascii: "r"): bytes.append(13)
        case UInt8(ascii: "t"): bytes.append(9)
        case UInt8(ascii: "0")...UInt8(ascii: "7"):
            var value = UInt32(next - UInt8(ascii: "0"))
            for _ in 0..<2 {
                guard let digit = input.first, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(digit) else { break }
                value = value * 8 + UInt32(digit - UInt8(ascii: "0"))
                input.removeFirst()
            }
            bytes.append(UInt8(truncatingIfNeeded: value))
        case UInt8(ascii: "x"):
            var value: UInt32 = 0
            while let digit = input.first, let nibble = hexValue(digit) {
                value = value * 16 + UInt32(nibble)
                input.removeFirst()
            }
            bytes.append(UInt8(truncatingIfNeeded: value))
        default: bytes.append(next)
        }
    }
    return bytes
}

private func hexValue(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
    default: nil
    }
}
