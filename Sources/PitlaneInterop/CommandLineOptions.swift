import Glibc
import PitlaneHTTP2

/// A command line's `--name=value` (or `--name value`) flags.
struct CommandLineFlags {
    private(set) var values: [String: String] = [:]

    init(_ arguments: [String]) throws(UsageError) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--") else { throw UsageError("unexpected argument \(argument)") }
            let flag = argument.dropFirst(2)
            if let equals = flag.firstIndex(of: "=") {
                values[String(flag[..<equals])] = String(flag[flag.index(after: equals)...])
            } else if let value = remaining.first, !value.hasPrefix("--") {
                values[String(flag)] = value
                remaining.removeFirst()
            } else {
                values[String(flag)] = "true"
            }
        }
    }

    func string(_ name: String) -> String? { values[name] }

    func int(_ name: String) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text) else { throw UsageError("--\(name) needs a number, not \(text)") }
        return value
    }

    func bool(_ name: String) throws(UsageError) -> Bool {
        switch values[name]?.lowercased() {
        case nil, "false", "0": false
        case "true", "1": true
        case let other?: throw UsageError("--\(name) is true or false, not \(other)")
        }
    }

    /// Fails on a flag not in `known`.
    func rejectUnknown(_ known: Set<String>) throws(UsageError) {
        if let unknown = values.keys.sorted().first(where: { !known.contains($0) }) {
            throw UsageError("unknown flag --\(unknown)")
        }
    }
}

/// A command line that does not say what the program needs; the program prints it and exits 2.
public struct UsageError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// What TLS being unavailable means for the executables until the transport has it.
let tlsUnavailable = UsageError("--use_tls=true is not supported yet: Pitlane's HTTP/2 transport has no TLS")

/// `pitlane-interop-server`'s flags.
public struct InteropServerOptions: Sendable {
    public static let usage = """
        usage: pitlane-interop-server --port=PORT [--host=ADDRESS] [--use_tls=false]
               pitlane-interop-server --unix_socket=PATH
          Serves grpc.testing.TestService; prints "listening PORT" (or "listening unix:PATH")
          once it is (port 0: the system picks one). --host defaults to 0.0.0.0.
        """

    public var address: HTTP2ServerTransport.Address

    public init(arguments: [String]) throws(UsageError) {
        let flags = try CommandLineFlags(arguments)
        try flags.rejectUnknown(["port", "host", "use_tls", "unix_socket"])
        if try flags.bool("use_tls") { throw tlsUnavailable }
        if let path = flags.string("unix_socket") {
            address = .unixDomainSocket(path: path)
        } else if let port = try flags.int("port") {
            address = .ipv4(host: flags.string("host") ?? "0.0.0.0", port: port)
        } else {
            throw UsageError("--port or --unix_socket is required")
        }
    }
}

/// `pitlane-interop-client`'s flags.
public struct InteropClientOptions: Sendable {
    public static let usage = """
        usage: pitlane-interop-client --server_host=HOST --server_port=PORT --test_case=NAME[,NAME...]
                 [--use_tls=false] [--use_test_ca=false] [--server_host_override=NAME]
               pitlane-interop-client --server_host=unix:PATH --test_case=NAME
          Runs interop test cases (all_cases: every one) against a grpc.testing.TestService;
          exits 0 when every case passes.
        cases: \(InteropTestCase.allCases.map(\.name).joined(separator: ", "))
        """

    public var target: HTTP2ClientTransport.Target
    public var testCases: [InteropTestCase]

    public init(arguments: [String]) throws(UsageError) {
        let flags = try CommandLineFlags(arguments)
        try flags.rejectUnknown(["server_host", "server_port", "test_case", "use_tls", "use_test_ca", "server_host_override"])
        if try flags.bool("use_tls") { throw tlsUnavailable }
        // Without TLS, --use_test_ca has nothing to do; --server_host_override names the
        // certificate's host, so it too waits for TLS.
        let host = flags.string("server_host") ?? "localhost"
        if host.hasPrefix("unix:") {
            target = .unixDomainSocket(path: String(host.dropFirst("unix:".count)))
        } else {
            guard let port = try flags.int("server_port") else { throw UsageError("--server_port is required") }
            target = host.allSatisfy({ $0.isNumber || $0 == "." }) ? .ipv4(host: host, port: port) : .dns(host: host, port: port)
        }
        guard let names = flags.string("test_case") else { throw UsageError("--test_case is required") }
        if names == "all_cases" {
            testCases = InteropTestCase.allCases
        } else {
            testCases = try names.split(separator: ",").map { name throws(UsageError) in
                guard let testCase = InteropTestCase(rawValue: String(name)) else { throw UsageError("no test case \(name)") }
                return testCase
            }
        }
    }
}

/// Writes a line to standard error, for the executables' messages.
public func printError(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}
