import Foundation
import PitlaneCore
import PitlaneHTTP2
import PitlaneHealth
import Synchronization

/// Creates the directory a database file goes in, if the path names one.
public func makeParentDirectory(of path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
}

/// Serves `server` until SIGINT or SIGTERM, as the Pitlane servers do.
///
/// Once listening, it marks the server and `services` SERVING, logs `describe(address)` and
/// prints "listening on ADDRESS" on standard output: the line scripts and tests wait for. On a
/// signal it logs it, turns NOT_SERVING, serves on for `drainDelay` (so balancers and probes
/// see it leave), runs `beforeDrain` (to end long-lived streams), and drains: GOAWAY, then
/// open streams finish. A second signal during the delay drains at once.
public func serveUntilTerminated(
    _ server: GRPCServer<HTTP2ServerTransport>, health: HealthService, services: [ServiceDescriptor],
    drainDelay: Duration = .zero,
    log: @escaping @Sendable (String) -> Void, beforeDrain: @escaping @Sendable () -> Void,
    describe: @Sendable (SocketAddress) -> String
) async throws {
    let signalsSeen = Mutex(0)
    let drain: @Sendable (String) -> Void = { name in
        log("\(name): shutting down gracefully")
        health.enterNotServing()
        beforeDrain()
        server.beginGracefulShutdown()
    }
    let signals = onTerminationSignals { name in
        let count = signalsSeen.withLock { count in
            count += 1
            return count
        }
        guard count == 1, drainDelay > .zero else { return drain(name) }
        log("\(name): not serving; draining in \(drainDelay) (another signal drains now)")
        health.enterNotServing()
        let delay = Double(drainDelay.components.seconds) + Double(drainDelay.components.attoseconds) / 1e18
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
            // Only if no second signal drained meanwhile.
            if signalsSeen.withLock({ $0 }) == 1 { drain(name) }
        }
    }
    defer { signals.cancel() }

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
