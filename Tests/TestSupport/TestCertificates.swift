import Foundation

/// Certificates for TLS tests, made with the `openssl` command in a temporary directory: a CA,
/// a server certificate it signed (for DNS:localhost and IP:127.0.0.1), a client certificate
/// it signed, and a second CA that nobody trusts with a client certificate of its own. No key
/// is committed; each test makes its own.
public struct TestCertificates: Sendable {
    public let directory: String

    public var caPath: String { "\(directory)/ca.pem" }
    public var serverCertificatePath: String { "\(directory)/server.pem" }
    public var serverKeyPath: String { "\(directory)/server.key" }
    public var clientCertificatePath: String { "\(directory)/client.pem" }
    public var clientKeyPath: String { "\(directory)/client.key" }
    /// A CA that signed neither the server's nor the client's certificate.
    public var untrustedCAPath: String { "\(directory)/untrusted-ca.pem" }
    /// A client certificate signed by the untrusted CA.
    public var strangerCertificatePath: String { "\(directory)/stranger.pem" }
    public var strangerKeyPath: String { "\(directory)/stranger.key" }

    public struct OpenSSLFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Makes every file in `directory`.
    public static func make(in directory: String) async throws -> TestCertificates {
        let certificates = TestCertificates(directory: directory)
        try certificates.writeConfigurations()
        try await certificates.makeCA("ca", name: "Pitlane Test CA")
        try await certificates.makeCA("untrusted-ca", name: "Pitlane Untrusted CA")
        try await certificates.makeLeaf("server", name: "localhost", signedBy: "ca", extensions: "server.ext")
        try await certificates.makeLeaf("client", name: "pitlane-test-client", signedBy: "ca", extensions: "client.ext")
        try await certificates.makeLeaf("stranger", name: "pitlane-stranger", signedBy: "untrusted-ca", extensions: "client.ext")
        return certificates
    }

    private func writeConfigurations() throws {
        let files = [
            "ca.cnf": """
            [req]
            distinguished_name = dn
            prompt = no
            x509_extensions = ca
            [dn]
            CN = placeholder
            [ca]
            basicConstraints = critical, CA:TRUE
            keyUsage = critical, keyCertSign, cRLSign
            subjectKeyIdentifier = hash
            """,
            "server.ext": """
            basicConstraints = critical, CA:FALSE
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectAltName = DNS:localhost, IP:127.0.0.1
            authorityKeyIdentifier = keyid
            """,
            "client.ext": """
            basicConstraints = critical, CA:FALSE
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = clientAuth
            authorityKeyIdentifier = keyid
            """,
        ]
        for (name, text) in files {
            try (text + "\n").write(toFile: "\(directory)/\(name)", atomically: true, encoding: .utf8)
        }
    }

    private func makeCA(_ stem: String, name: String) async throws {
        try await openssl([
            "req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-keyout", "\(directory)/\(stem).key", "-out", "\(directory)/\(stem).pem", "-days", "2",
            "-config", "\(directory)/ca.cnf", "-subj", "/CN=\(name)",
        ])
    }

    private func makeLeaf(_ stem: String, name: String, signedBy ca: String, extensions: String) async throws {
        try await openssl([
            "req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-keyout", "\(directory)/\(stem).key", "-out", "\(directory)/\(stem).csr", "-subj", "/CN=\(name)",
        ])
        try await openssl([
            "x509", "-req", "-in", "\(directory)/\(stem).csr", "-CA", "\(directory)/\(ca).pem",
            "-CAkey", "\(directory)/\(ca).key", "-set_serial", String(UInt32.random(in: 1...UInt32.max)),
            "-days", "2", "-extfile", "\(directory)/\(extensions)", "-out", "\(directory)/\(stem).pem",
        ])
    }

    private func openssl(_ arguments: [String]) async throws {
        let (status, output) = try await runProcess("/usr/bin/openssl", arguments)
        guard status == 0 else {
            throw OpenSSLFailure(description: "openssl \(arguments.joined(separator: " ")) failed: \(output)")
        }
    }
}

/// Runs `body` with fresh certificates in a temporary directory, removed afterwards.
public func withTestCertificates<T>(_ body: (TestCertificates) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        try await body(try await TestCertificates.make(in: directory))
    }
}
