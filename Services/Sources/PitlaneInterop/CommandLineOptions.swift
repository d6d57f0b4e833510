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

/// `pitlane-interop-server`'s flags.
public struct InteropServerOptions: Sendable {
    public static let usage = """
        usage: pitlane-interop-server --port=PORT [--host=ADDRESS]
                 [--use_tls=true --tls_cert_file=PEM --tls_key_file=PEM]
               pitlane-interop-server --unix_socket=PATH [--use_tls=true ...]
          Serves grpc.testing.TestService; prints "listening PORT" (or "listening unix:PATH")
          once it is (port 0: the system picks one). --host defaults to 0.0.0.0 (:: for IPv6).
          With TLS, the certificate is the one gRPC's interop tests name server1.pem (and its key).
        """

    public var address: HTTP2ServerTransport.Address
    public var security: HTTP2ServerTransport.Security

    public init(arguments: [String]) throws(UsageError) {
        let flags = try CommandLineFlags(arguments)
        try flags.rejectUnknown(["port", "host", "use_tls", "tls_cert_file", "tls_key_file", "unix_socket"])
        if let path = flags.string("unix_socket") {
            address = .unixDomainSocket(path: path)
        } else if let port = try flags.int("port") {
            let host = flags.string("host") ?? "0.0.0.0"
            address = host.contains(":") ? .ipv6(host: host, port: port) : .ipv4(host: host, port: port)
        } else {
            throw UsageError("--port or --unix_socket is required")
        }
        if try flags.bool("use_tls") {
            guard let certificate = flags.string("tls_cert_file"), let key = flags.string("tls_key_file") else {
                throw UsageError("--use_tls=true needs --tls_cert_file and --tls_key_file (PEM files)")
            }
            security = .tls(.init(certificateChainPath: certificate, privateKeyPath: key))
        } else {
            security = .plaintext
        }
    }
}

/// `pitlane-interop-client`'s flags.
public struct InteropClientOptions: Sendable {
    public static let usage = """
        usage: pitlane-interop-client --server_host=HOST --server_port=PORT --test_case=NAME[,NAME...]
                 [--use_tls=true [--use_test_ca=true --ca_file=PEM] [--server_host_override=NAME]]
               pitlane-interop-client --server_host=unix:PATH --test_case=NAME
          Runs interop test cases (all_cases: every one) against a grpc.testing.TestService;
          exits 0 when every case passes. TLS trusts the system's roots, or with --use_test_ca
          the CA in --ca_file (gRPC's interop tests name it ca.pem); --server_host_override is
          the name the server's certificate must carry.
        cases: \(InteropTestCase.allCases.map(\.name).joined(separator: ", "))
        """

    public var target: HTTP2ClientTransport.Target
    public var security: HTTP2ClientTransport.Security
    public var testCases: [InteropTestCase]

    public init(arguments: [String]) throws(UsageError) {
        let flags = try CommandLineFlags(arguments)
        try flags.rejectUnknown([
            "server_host", "server_port", "test_case", "use_tls", "use_test_ca", "ca_file",
            "server_host_override",
        ])
        let host = flags.string("server_host") ?? "localhost"
        if host.hasPrefix("unix:") {
            target = .unixDomainSocket(path: String(host.dropFirst("unix:".count)))
        } else {
            guard let port = try flags.int("server_port") else { throw UsageError("--server_port is required") }
            target =
                if host.allSatisfy({ $0.isNumber || $0 == "." }) {
                    .ipv4(host: host, port: port)
                } else if host.contains(":") {
                    .ipv6(host: host, port: port)
                } else {
                    .dns(host: host, port: port)
                }
        }
        if try flags.bool("use_tls") {
            var tls = HTTP2ClientTransport.TLSConfig(serverHostnameOverride: flags.string("server_host_override"))
            if try flags.bool("use_test_ca") {
                guard let ca = flags.string("ca_file") else {
                    throw UsageError("--use_test_ca=true needs --ca_file, the test CA's PEM file")
                }
                tls.trustRootsPath = ca
            }
            security = .tls(tls)
        } else {
            security = .plaintext
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
