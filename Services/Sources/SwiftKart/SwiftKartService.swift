import PitlaneCore
import PitlaneProtobuf

/// The SwiftKart service: the race schedule (`ListRaces`) and live race following
/// (`FollowRace`), as the session builds it, on `RaceDB` and `RaceTracker`.
public struct RaceService: SwiftKartService.SimpleServiceProtocol {
    private let database: RaceDB
    private let tracker: RaceTracker

    public init(database: RaceDB, tracker: RaceTracker) {
        self.database = database
        self.tracker = tracker
    }

    public func listRaces(request: ListRacesRequest, context: ServerContext) async throws -> ListRacesResponse {
        var response = ListRacesResponse()
        response.races = try await database.listRaces(atMost: request.limit)
        return response
    }

    /// The first request picks the race and the event types; later ones replace the event
    /// types on the open stream. The client's half-close ends the RPC, and so does the end of
    /// the race. The requests are delivered as they arrive (the first to this task, which
    /// looks the race up; the rest to the follower), and once the race is found the events go
    /// to the stream with no task: the handler returns, and a follower costs its stream and
    /// its subscription.
    public func followRace(
        request: RPCAsyncSequence<FollowRaceRequest, any Error>,
        response: RPCWriter<FollowRaceResponse>,
        context: ServerContext
    ) async throws {
        let selection = RaceSelection(tracker: tracker)
        guard let stopRequests = request.startDelivering(to: { selection.receive($0) }) else {
            // An interceptor's own request sequence, read by a child task: this one stays
            // until the race ends, so that the requests keep reaching the follower.
            return try await request.delivering(to: { selection.receive($0) }) {
                let (ended, end) = AsyncStream.makeStream(of: Void.self)
                try await follow(from: selection, to: response) { end.finish() }
                for await _ in ended {}
            }
        }
        do {
            try await follow(from: selection, to: response)
        } catch {
            stopRequests()
            throw error
        }
    }

    /// Follows the race the first request names, its events going to `response` until the
    /// race is over; `ended` runs then (at once when the client half-closes before naming a
    /// race). The requests go on reaching the follower until the client's stream ends.
    private func follow(
        from selection: RaceSelection, to response: RPCWriter<FollowRaceResponse>, ended: (@Sendable () -> Void)? = nil
    ) async throws {
        // A client that half-closes before naming a race has followed nothing: OK.
        guard let first = try await selection.firstRequest() else { return ended?() ?? () }
        let follower = try await follow(first)
        selection.start(follower)
        try await follower.forward(to: response, leaving: tracker, then: ended)
    }

    /// A follower of the race the first request names. A call of its own, so that its frame
    /// is gone before the RPC settles into forwarding.
    private func follow(_ first: FollowRaceRequest) async throws -> RaceFollower {
        let race = try await race(named: first.raceName, for: "FollowRace")
        return tracker.follow(race, eventTypes: Set(first.eventTypes))
    }

    /// `FollowRace` with one request: its race and event types, until the race is over.
    public func watchRace(
        request: FollowRaceRequest, response: RPCWriter<FollowRaceResponse>, context: ServerContext
    ) async throws {
        let race = try await race(named: request.raceName, for: "WatchRace")
        let follower = tracker.follow(race, eventTypes: Set(request.eventTypes))
        try await follower.forward(to: response, leaving: tracker)
    }

    private func race(named name: String, for method: String) async throws -> ScheduledRace {
        guard !name.isEmpty else {
            let which = method == "FollowRace" ? "the first FollowRaceRequest" : "the request"
            throw RPCError(code: .invalidArgument, message: "\(method): \(which) must name a race (race_name)")
        }
        guard let race = try await database.race(named: name) else {
            throw RPCError(code: .notFound, message: "no race named '\(name)'")
        }
        return race
    }
}
