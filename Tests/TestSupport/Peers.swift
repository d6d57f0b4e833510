import Foundation

/// Where the Python peers (`Tests/Peers`) and their interpreter are, for any test target.
public enum Peers {
    /// The repository's root: this file is `Tests/TestSupport/Peers.swift` (links resolved: the
    /// services package reaches it through `Services/Tests/TestSupport`).
    public static let repositoryRoot = URL(filePath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The virtual environment's Python, with grpcio and the other peers' packages.
    public static let python = repositoryRoot.appending(path: ".venv/bin/python").path
    /// The echo service's .proto files, for peers that compile them.
    public static let protos = repositoryRoot.appending(path: "Tests/TestSupport").path

    /// The path of the peer script `name` in `Tests/Peers`.
    public static func script(_ name: String) -> String {
        repositoryRoot.appending(path: "Tests/Peers/\(name)").path
    }

    /// Runs a Python peer to its end; returns everything it printed.
    public static func run(_ arguments: [String]) async throws -> String {
        try await runProcess(python, arguments).output
    }
}
