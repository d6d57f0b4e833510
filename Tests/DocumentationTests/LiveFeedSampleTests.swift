import Foundation
import Pitlane
import PitlaneLive
import Testing

@Suite("The live feed of the article, run", .timeLimit(.minutes(1)))
struct LiveFeedSampleTests {
    @Test("the snapshot, then every later goal in order, over HTTP/2 on 127.0.0.1")
    func followsAMatch() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "live-feed-\(UInt64.random(in: 0 ... .max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try openScores(path: directory + "/scores.sqlite")
        try await recordScore("1–0", in: "final", log: log)
        let server = GRPCServer(transport: .http2(address: .ipv4(host: "127.0.0.1", port: 0)), services: [ScoreboardService(log: log)])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try await server.listeningAddress.port ?? 0
            try await withGRPCClient(transport: try .http2(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                var seen: [String] = []
                for try await event in followMatch("final", client: client) {
                    switch event {
                    case .bootstrapped(let match): seen.append(match.score)
                    case .update(let goal): seen.append(goal.score)
                    case .connection(.live):
                        try await recordScore("2–0", in: "final", log: log)
                        try await recordScore("2–1", in: "final", log: log)
                    case .connection: break
                    }
                    if seen.count == 3 { break }
                }
                #expect(seen == ["1–0", "2–0", "2–1"])
            }
        }
    }
}
