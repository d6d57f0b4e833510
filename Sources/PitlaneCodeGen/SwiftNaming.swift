/// How protobuf names become Swift names, following the conventions Swift protobuf users
/// know: `orders.v1.OrderUpdate` → `Orders_V1_OrderUpdate`, `since_update_id` →
/// `sinceUpdateID`, `RACE_EVENT_TYPE_KART_LOCATIONS` in `RaceEventType` → `kartLocations`.
enum SwiftNaming {
    /// Words written in capitals when they are not the first word of a name.
    static let initialisms: Set<String> = ["id", "url", "http", "https", "uri", "json"]

    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import",
        "init", "inout", "internal", "let", "open", "operator", "private", "precedencegroup",
        "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var",
        "break", "case", "catch", "continue", "default", "defer", "do", "else", "fallthrough",
        "for", "guard", "if", "in", "repeat", "return", "throw", "switch", "where", "while",
        "Any", "as", "await", "false", "is", "nil", "self", "Self", "super", "throws", "true",
        "try", "async", "some", "any", "consume", "copy", "borrowing", "consuming", "package",
        "Type", "Protocol",
    ]

    /// Type names that would shadow what generated code uses; such messages get a suffix.
    static let reservedTypeNames: Set<String> = [
        "Any", "Array", "Bool", "Dictionary", "Double", "Equatable", "Error", "Float", "Hashable",
        "Int", "Int32", "Int64", "Optional", "Protocol", "Self", "Sendable", "String", "Type",
        "UInt32", "UInt64", "UInt8", "Void", "OneOf", "Hasher", "Set", "Never", "Character",
    ]

    /// Member names a message already has; fields with these names get a `_p` suffix.
    static let reservedMemberNames: Set<String> = [
        "unknownFields", "isInitialized", "hashValue", "debugDescription", "description",
        "encodedSize", "serializedBytes", "protoMessageName", "decodeFields", "encodeFields",
        "merge", "encode", "with", "hash", "self", "Self", "Type", "Protocol", "extensions",
        "textFormatString", "jsonString", "init",
    ]

    /// Member names a generated enum already has; values with these names get a `_p` suffix.
    static let reservedEnumMemberNames: Set<String> = [
        "rawValue", "allCases", "protoName", "init", "hashValue", "hash", "self", "Self", "Type",
        "Protocol", "UNRECOGNIZED", "unrecognized", "description", "debugDescription",
    ]

    /// Any text as UpperCamelCase words, everything but letters and digits a word break:
    /// `order-v2.beta` → `OrderV2Beta`.
    static func identifierWords(_ text: String) -> String {
        upperCamelCase(String(text.map { $0.isLetter || $0.isNumber ? $0 : "_" }))
    }

    /// `foo_bar_id` → `fooBarID`; `URL` alone stays `url`.
    static func lowerCamelCase(_ name: String) -> String {
        let words = splitWords(name)
        guard let first = words.first else { return name }
        return first.lowercased() + words.dropFirst().map(capitalized).joined()
    }

    /// `foo_bar` → `FooBar`.
    static func upperCamelCase(_ name: String) -> String {
        splitWords(name).map(capitalized).joined()
    }

    /// A word with a capital first letter, or all capitals for an initialism.
    private static func capitalized(_ word: String) -> String {
        let lower = word.lowercased()
        if initialisms.contains(lower) { return lower.uppercased() }
        return lower.prefix(1).uppercased() + lower.dropFirst()
    }

    /// Splits on underscores and where a lower-case letter meets an upper-case one.
    private static func splitWords(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        var previous: Character?
        for character in name {
            if character == "_" {
                if !current.isEmpty { words.append(current) }
                current = ""
                previous = nil
                continue
            }
            if let previous, previous.isLowercase && character.isUppercase {
                words.append(current)
                current = ""
            }
            current.append(character)
            previous = character
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// The type-name prefix a file's package gives: `orders.v1` → `Orders_V1_`.
    static func typePrefix(package: String, swiftPrefix: String?) -> String {
        if let swiftPrefix { return swiftPrefix }
        guard !package.isEmpty else { return "" }
        return package.split(separator: ".").map { upperCamelCase(String($0)) }.joined(separator: "_") + "_"
    }

    /// A message or enum name made safe as a Swift type name: with a prefix (a package's,
    /// or an enclosing type's ending in `.`) it cannot shadow a standard type unless the
    /// prefix is a scope.
    static func typeName(_ name: String, prefix: String) -> String {
        let shadows = (prefix.isEmpty || prefix.hasSuffix(".")) && reservedTypeNames.contains(name)
        return prefix + (shadows ? name + "Message" : name)
    }

    /// Backquotes a name that is a Swift keyword.
    static func escaped(_ name: String) -> String {
        keywords.contains(name) ? "`\(name)`" : name
    }

    /// An enum value's case name, with the enum's own name stripped from its front.
    static func enumCaseName(_ valueName: String, enumName: String) -> String {
        var stripped = Substring(valueName)
        let prefix = enumName.lowercased().filter { $0 != "_" }
        var matched = ""
        var index = stripped.startIndex
        while index < stripped.endIndex, matched.count < prefix.count {
            let character = stripped[index]
            if character != "_" { matched.append(Character(character.lowercased())) }
            index = stripped.index(after: index)
        }
        if matched == prefix {
            stripped = stripped[index...].drop { $0 == "_" }
        }
        if stripped.isEmpty || stripped.first!.isNumber { stripped = Substring(valueName) }
        return lowerCamelCase(String(stripped))
    }

    /// A Swift string literal holding `text` exactly.
    static func stringLiteral(_ text: String) -> String {
        var literal = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": literal += "\\\""
            case "\\": literal += "\\\\"
            case "\n": literal += "\\n"
            case "\r": literal += "\\r"
            case "\t": literal += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                literal += "\\u{\(String(scalar.value, radix: 16))}"
            default: literal.unicodeScalars.append(scalar)
            }
        }
        return literal + "\""
    }
}
