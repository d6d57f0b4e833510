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
    /// the race. One task serves the RPC: it reads the first request itself, then later
    /// requests are delivered to the follower as they arrive while it forwards events.
    public func followRace(
        request: RPCAsyncSequence<FollowRaceRequest, any Error>,
        response: RPCWriter<FollowRaceResponse>,
        context: ServerContext
    ) async throws {
        guard let (follower, requests) = try await startFollowing(request) else { return }
        defer { tracker.leave(follower) }
        try await requests.delivering(to: { [tracker] delivery in
            switch delivery {
            case .success(let change?): tracker.change(follower, eventTypes: Set(change.eventTypes))
            case .success(nil): follower.finish()
            case .failure(let error): follower.fail(error)
            }
        }) {
            try await follower.forward(to: response)
        }
    }

    /// The follower of the race the first request names, and the requests after it; nil if
    /// the client half-closed before naming a race (it followed nothing: OK). A call of its
    /// own, so that its frame is gone before the RPC settles into forwarding.
    private func startFollowing(
        _ request: RPCAsyncSequence<FollowRaceRequest, any Error>
    ) async throws -> (RaceFollower, RPCAsyncSequence<FollowRaceRequest, any Error>)? {
        var requests = request.makeAsyncIterator()
        guard let first = try await requests.next() else { return nil }
        let race = try await race(named: first.raceName, for: "FollowRace")
        let follower = tracker.follow(race, eventTypes: Set(first.eventTypes))
        return (follower, RPCAsyncSequence(remainderOf: requests))
    }

    /// `FollowRace` with one request: its race and event types, until the race is over.
    public func watchRace(
        request: FollowRaceRequest, response: RPCWriter<FollowRaceResponse>, context: ServerContext
    ) async throws {
        let race = try await race(named: request.raceName, for: "WatchRace")
        let follower = tracker.follow(race, eventTypes: Set(request.eventTypes))
        defer { tracker.leave(follower) }
        try await follower.forward(to: response)
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
