import Foundation
import PitlaneCore
import PitlaneHTTP2
import PitlaneHealth

/// Creates the directory a database file goes in, if the path names one.
public func makeParentDirectory(of path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
}

/// Serves `server` until SIGINT or SIGTERM, as the Pitlane servers do.
///
/// Once listening, it marks the server and `services` SERVING, logs `describe(address)` and
/// prints "listening on ADDRESS" on standard output: the line scripts and tests wait for. On a
/// signal it logs it, turns NOT_SERVING, runs `beforeDrain` (to end long-lived streams), and
/// drains: GOAWAY, then open streams finish.
public func serveUntilTerminated(
    _ server: GRPCServer<HTTP2ServerTransport>, health: HealthService, services: [ServiceDescriptor],
    log: @escaping @Sendable (String) -> Void, beforeDrain: @escaping @Sendable () -> Void,
    describe: (SocketAddress) -> String
) async throws {
    let signalSources = onTerminationSignals { name in
        log("\(name): shutting down gracefully")
        health.enterNotServing()
        beforeDrain()
        server.beginGracefulShutdown()
    }
    defer { signalSources.forEach { $0.cancel() } }

    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.serve() }
        let listening = try await server.listeningAddress
        health.setStatus(.serving)
        for service in services { health.setStatus(.serving, forService: service.fullyQualifiedService) }
        log(describe(listening))
        FileHandle.standardOutput.write(Data("listening on \(listening)\n".utf8))
        try await group.waitForAll()
    }
}
