// The code of the article "Live feeds" (PitlaneLive.docc/LiveFeeds.md), compiled here;
// ArticleSampleTests checks that the article shows it as it is, and LiveFeedSampleTests runs it.
import Pitlane
import PitlaneLive
import PitlaneSQLite

typealias Match = Scores_Match
typealias Goal = Scores_Goal

/// The scores of every match: a log with a key per match.
func openScores(path: String) throws -> FeedLog {
    try FeedLog(
        name: "scores", database: try SQLiteStore(path: path),
        names: FeedNames(domain: "scores.example.com", keyField: "match_id", noun: "match", restart: "call GetMatch again"))
}

/// A goal: appended, committed, and on its way to every watcher of the match.
func recordScore(_ score: String, in matchID: String, log: FeedLog) async throws {
    try await log.append(Array(score.utf8), to: matchID)
}

struct ScoreboardService: Scores_Scoreboard.SimpleServiceProtocol {
    let log: FeedLog

    // The snapshot: the newest score, and the position it stands at.
    func getMatch(request: Scores_GetMatchRequest, context: ServerContext) async throws -> Match {
        let newest = try await log.state(of: request.matchID)?.lastSequence ?? 0
        let entry = try await log.entries(of: request.matchID, after: max(0, newest - 1), limit: 1).last
        return .with {
            $0.matchID = request.matchID
            $0.score = entry.map { String(decoding: $0.payload, as: UTF8.self) } ?? "0–0"
            $0.latestUpdateID = log.position(of: request.matchID, sequence: newest).token
        }
    }

    // The updates: the backlog after the client's position, then live, each once and in order.
    // A bad token is a FeedError: its status (INVALID_ARGUMENT, OUT_OF_RANGE) and ErrorInfo.
    func watchMatch(request: Scores_WatchMatchRequest, response: RPCWriter<Goal>, context: ServerContext) async throws {
        let start = try await log.start(of: request.matchID, after: request.sinceUpdateID)
        try await FeedStream(log: log, key: request.matchID).run(after: start) { entry in
            try await response.write(
                .with {
                    $0.score = String(decoding: entry.payload, as: UTF8.self)
                    $0.updateID = log.position(of: entry.key, sequence: entry.sequence).token
                })
        }
    }
}

/// Follows a match: the snapshot, then every goal, resuming after a reconnect.
func followMatch(_ matchID: String, client: GRPCClient<HTTP2ClientTransport>) -> ResumingSubscription<Match, Goal> {
    let scoreboard = Scores_Scoreboard.Client(wrapping: client)
    return ResumingSubscription(
        timeSource: client.transport.timeSource,
        bootstrap: {
            let match = try await scoreboard.getMatch(.with { $0.matchID = matchID })
            return (match, match.latestUpdateID)
        },
        follow: { stream in
            let request = Scores_WatchMatchRequest.with {
                $0.matchID = matchID
                $0.sinceUpdateID = stream.after
            }
            try await scoreboard.watchMatch(request) { try await stream.forward($0) }
        },
        position: { $0.updateID })
}

/// What a screen does with it.
func showMatch(_ matchID: String, client: GRPCClient<HTTP2ClientTransport>) async throws {
    for try await event in followMatch(matchID, client: client) {
        switch event {
        case .bootstrapped(let match): print("\(match.matchID): \(match.score)")
        case .update(let goal): print("goal: \(goal.score)")
        case .connection(let state): print("connection: \(state)")
        }
    }
}
