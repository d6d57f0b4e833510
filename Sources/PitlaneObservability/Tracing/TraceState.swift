/// W3C Trace Context's `tracestate` header: vendors' `key=value` list members that travel
/// with `traceparent`. Read strictly and never fatal: a value that breaks the rules is dropped
/// whole (as the spec asks of a receiver that cannot parse it) and the call goes on without it.
///
/// The rules (W3C Trace Context, level 1): at most 32 list members, separated by commas with
/// optional spaces or tabs around them, empty members ignored; a key is `simple-key`
/// (lowercase letter, then up to 255 of `a-z 0-9 _ - * /`) or `tenant@system` (up to 241 and
/// 14 of those, the tenant starting with a letter or digit, the system with a letter); a value
/// is 1 to 256 printable ASCII characters except `,` and `=`, not ending in a space; a key
/// appears once. Pitlane also caps the whole value, as it forwards it, at 512 characters.
enum TraceState {
    static let maxMembers = 32
    static let maxLength = 512

    /// The header's values (repeated fields join with commas, as HTTP joins them), checked and
    /// written back compactly (`a=1,b=2`); nil when absent, empty or malformed.
    static func validated(_ values: [String]) -> String? {
        guard !values.isEmpty else { return nil }
        var members: [Substring] = []
        var keys: Set<Substring> = []
        for value in values {
            for rawMember in value.split(separator: ",", omittingEmptySubsequences: false) {
                let member = trimmed(rawMember)
                if member.isEmpty { continue }
                guard members.count < maxMembers, let equals = member.firstIndex(of: "="),
                    isKey(member[..<equals]), isValue(member[member.index(after: equals)...]),
                    keys.insert(member[..<equals]).inserted
                else { return nil }
                members.append(member)
            }
        }
        guard !members.isEmpty else { return nil }
        let joined = members.joined(separator: ",")
        return joined.utf8.count <= maxLength ? joined : nil
    }

    /// Without the optional whitespace (spaces and tabs) around a list member.
    private static func trimmed(_ member: Substring) -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = member.firstIndex(where: { !isSpace($0) }), let last = member.lastIndex(where: { !isSpace($0) }) else {
            return member[member.endIndex...]
        }
        return member[first...last]
    }

    private static func isKeyCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "*"), UInt8(ascii: "/"):
            true
        default: false
        }
    }

    private static func isLowercaseLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// `simple-key` or `tenant-id@system-id`.
    static func isKey(_ key: Substring) -> Bool {
        let bytes = Array(key.utf8)
        guard let at = bytes.firstIndex(of: UInt8(ascii: "@")) else {
            return (1...256).contains(bytes.count) && isLowercaseLetter(bytes[0]) && bytes.allSatisfy(isKeyCharacter)
        }
        let tenant = bytes[..<at]
        let system = bytes[(at + 1)...]
        return (1...241).contains(tenant.count) && (isLowercaseLetter(tenant[tenant.startIndex]) || isDigit(tenant[tenant.startIndex]))
            && tenant.allSatisfy(isKeyCharacter)
            && (1...14).contains(system.count) && isLowercaseLetter(system[system.startIndex]) && system.allSatisfy(isKeyCharacter)
    }

    /// 1 to 256 characters of 0x20–0x7E except `,` and `=`, the last not a space.
    static func isValue(_ value: Substring) -> Bool {
        let bytes = Array(value.utf8)
        guard (1...256).contains(bytes.count), bytes.last != UInt8(ascii: " ") else { return false }
        return bytes.allSatisfy { (0x20...0x7E).contains($0) && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "=") }
    }
}
