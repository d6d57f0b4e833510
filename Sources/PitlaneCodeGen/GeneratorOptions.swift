/// What the generator writes and how, from protoc's `--pitlane_opt` parameter:
/// comma-separated `Key=Value` pairs, for example `Visibility=Public,FileNaming=DropPath`.
public struct GeneratorOptions: Sendable {
    /// The access level of generated declarations.
    public enum Visibility: String, Sendable {
        case `internal` = "Internal"
        case `public` = "Public"
        case `package` = "Package"
    }

    /// How output files are named after their .proto files.
    public enum FileNaming: String, Sendable {
        /// `a/b/c.proto` → `a/b/c.pb.swift`.
        case fullPath = "FullPath"
        /// `a/b/c.proto` → `a_b_c.pb.swift`.
        case pathToUnderscores = "PathToUnderscores"
        /// `a/b/c.proto` → `c.pb.swift`.
        case dropPath = "DropPath"
    }

    /// Default `.internal`.
    public var visibility = Visibility.internal
    /// Default `.fullPath`.
    public var fileNaming = FileNaming.fullPath
    /// Write message and enum types. Default true.
    public var messages = true
    /// Write client stubs for services. Default true.
    public var clients = true
    /// Write server protocols for services. Default true.
    public var servers = true
    /// Write `import PitlaneProtobuf`; false when generating into the runtime itself.
    public var importRuntime = true
    /// Make the binary encoding methods (`encodeFields`, `encodedSize`) `@inlinable`, for
    /// public types in a library, such as the runtime's well-known types: a message that holds
    /// one is then encoded without calls the optimizer cannot see into, which would make it
    /// copy every element of a repeated field it encodes. Needs `Visibility=Public`. Default false.
    public var inlinableCodec = false

    public init() {}

    /// Parses protoc's parameter string.
    public init(parameter: String) throws {
        for pair in parameter.split(separator: ",") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
            let key = parts[0]
            let value = parts.count > 1 ? parts[1] : ""
            func flag() throws -> Bool {
                switch value.lowercased() {
                case "true", "yes", "1", "": return true
                case "false", "no", "0": return false
                default: throw GeneratorError("option \(key) takes true or false, not \(value)")
                }
            }
            switch key.lowercased() {
            case "visibility":
                guard let parsed = Visibility(rawValue: value.prefix(1).uppercased() + value.dropFirst().lowercased()) else {
                    throw GeneratorError("Visibility must be Internal, Public or Package, not \(value)")
                }
                visibility = parsed
            case "filenaming":
                guard let parsed = FileNaming(rawValue: value) else {
                    throw GeneratorError("FileNaming must be FullPath, PathToUnderscores or DropPath, not \(value)")
                }
                fileNaming = parsed
            case "messages": messages = try flag()
            case "clients": clients = try flag()
            case "servers": servers = try flag()
            case "importruntime": importRuntime = try flag()
            case "inlinablecodec": inlinableCodec = try flag()
            default: throw GeneratorError("unknown option \(key)")
            }
        }
        if inlinableCodec && visibility != .public {
            throw GeneratorError("InlinableCodec needs Visibility=Public")
        }
    }

    /// The access keyword and a space, or nothing for internal.
    var accessPrefix: String {
        switch visibility {
        case .internal: ""
        case .public: "public "
        case .package: "package "
        }
    }

    /// The generated file's name for a .proto file.
    func outputName(for protoFile: String, suffix: String = ".pb.swift") -> String {
        let base = protoFile.hasSuffix(".proto") ? String(protoFile.dropLast(6)) : protoFile
        switch fileNaming {
        case .fullPath: return base + suffix
        case .pathToUnderscores: return base.replacingAll("/", with: "_") + suffix
        case .dropPath: return String(base.split(separator: "/").last ?? Substring(base)) + suffix
        }
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    func replacingAll(_ target: Character, with replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
