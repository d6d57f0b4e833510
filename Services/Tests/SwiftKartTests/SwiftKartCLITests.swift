import Foundation
import TestSupport
import Testing

/// The `swiftkart` command-line client against a real `swiftkart-server`, plaintext and TLS.
@Suite("swiftkart command-line client", .timeLimit(.minutes(5)))
struct SwiftKartCLITests {
    static let client = SwiftKartServerTests.root.appending(path: ".build/debug/swiftkart").path

    @Test("races prints the schedule as a table; follow --plain prints standings until --seconds ends it")
    func racesAndFollow() async throws {
        let directory = try TemporaryDirectory()
        let server = try await ServerProcess.start(
            SwiftKartServerTests.server,
            ["--port", "0", "--database", directory.path + "/db.sqlite", "--speed", "10"])
        let port = String(server.port)
        let races = try await runProcess(Self.client, ["races", "--port", port, "--limit", "3"])
        #expect(races.status == 0, "\(races.output)")
        let lines = races.output.split(separator: "\n")
        #expect(lines.first?.hasPrefix("START (UTC)") == true && lines.last == "3 races" && lines.count == 5, "\(races.output)")

        let follow = try await runProcess(Self.client, ["follow", "Duck Pond Dash", "--port", port, "--plain", "--seconds", "2"])
        #expect(follow.status == 0, "\(follow.output)")
        #expect(follow.output.contains("  1. #") && follow.output.contains("leader") && follow.output.contains("lap "), "\(follow.output)")

        let unknown = try await runProcess(Self.client, ["follow", "Nowhere 500", "--port", port, "--plain"])
        #expect(unknown.status == 1 && unknown.output.contains("no race named"), "\(unknown.output)")
        #expect(await server.stop().status == 0)
    }

    @Test("over a Unix domain socket")
    func unixSocket() async throws {
        let directory = try TemporaryDirectory()
        let socket = directory.path + "/swiftkart.sock"
        let server = try await ServerProcess.start(
            SwiftKartServerTests.server,
            ["--unix", socket, "--database", directory.path + "/db.sqlite"])
        let races = try await runProcess(Self.client, ["races", "--unix", socket, "--limit", "2"])
        #expect(races.status == 0 && races.output.contains("2 races"), "\(races.output)")
        #expect(await server.stop().status == 0)
    }

    @Test("TLS: the server presents its certificate; the client verifies it against --ca, and fails without it")
    func tls() async throws {
        try await withTestCertificates { certificates in
            let server = try await ServerProcess.start(
                SwiftKartServerTests.server,
                [
                    "--port", "0", "--database", certificates.directory + "/db.sqlite",
                    "--tls-cert", certificates.serverCertificatePath, "--tls-key", certificates.serverKeyPath,
                ])
            let port = String(server.port)
            let trusted = try await runProcess(Self.client, ["races", "--port", port, "--tls", "--ca", certificates.caPath])
            #expect(trusted.status == 0 && trusted.output.contains("22 races"), "\(trusted.output)")
            let byName = try await runProcess(Self.client, ["races", "--host", "localhost", "--port", port, "--ca", certificates.caPath])
            #expect(byName.status == 0 && byName.output.contains("22 races"), "\(byName.output)")
            let untrusted = try await runProcess(Self.client, ["races", "--port", port, "--tls", "--ca", certificates.untrustedCAPath])
            #expect(untrusted.status == 1 && untrusted.output.contains("UNAVAILABLE"), "\(untrusted.output)")
            let plaintext = try await runProcess(Self.client, ["races", "--port", port])
            #expect(plaintext.status == 1, "\(plaintext.output)")
            #expect(await server.stop().status == 0)
        }
    }
}
