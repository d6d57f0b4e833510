import Glibc

/// The command line of the SwiftKart executables: `--name value`, `--name=value`, bare
/// `--flag`s and positional arguments, with a clear error for anything unexpected.
public struct CommandLineOptions {
    public struct UsageError: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public private(set) var positional: [String] = []
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments`; `valueOptions` take a value, `flagOptions` do not (names without `--`).
    /// With `usage`, `--help` or `-h` anywhere prints it to standard output and ends the
    /// program with status 0, as a command-line program is expected to.
    public init(_ arguments: [String], usage: String? = nil, valueOptions: Set<String>, flagOptions: Set<String> = []) throws {
        if let usage, arguments.contains(where: { $0 == "--help" || $0 == "-h" }) {
            print(usage)
            exit(0)
        }
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--") else {
                positional.append(argument)
                continue
            }
            let body = argument.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            if flagOptions.contains(name) {
                guard !body.contains("=") else { throw UsageError(description: "--\(name) takes no value") }
                flags.insert(name)
            } else if valueOptions.contains(name) {
                if let equals = body.firstIndex(of: "=") {
                    values[name] = String(body[body.index(after: equals)...])
                } else if let value = remaining.popFirst() {
                    values[name] = value
                } else {
                    throw UsageError(description: "--\(name) needs a value")
                }
            } else {
                throw UsageError(description: "unknown option --\(name)")
            }
        }
    }

    public subscript(_ name: String) -> String? { values[name] }

    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The integer value of `name`, or `defaultValue` when it is absent.
    public func integer(_ name: String, default defaultValue: Int) throws -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let value = Int(text) else { throw UsageError(description: "--\(name) must be a whole number, not '\(text)'") }
        return value
    }

    /// The number value of `name`, or `defaultValue` when it is absent.
    public func number(_ name: String, default defaultValue: Double) throws -> Double {
        guard let text = values[name] else { return defaultValue }
        guard let value = Double(text), value.isFinite else { throw UsageError(description: "--\(name) must be a number, not '\(text)'") }
        return value
    }
}
