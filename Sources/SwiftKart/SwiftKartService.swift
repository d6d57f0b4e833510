import PitlaneCore
import PitlaneProtobuf
import Synchronization

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
    /// the race.
    public func followRace(
        request: RPCAsyncSequence<FollowRaceRequest, any Error>,
        response: RPCWriter<FollowRaceResponse>,
        context: ServerContext
    ) async throws {
        let selection = RaceSelection()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await message in request {
                        if let follower = selection.follower {
                            tracker.change(follower, eventTypes: Set(message.eventTypes))
                        } else {
                            let race = try await self.race(named: message.raceName, for: "FollowRace")
                            selection.start(tracker.follow(race, eventTypes: Set(message.eventTypes)))
                        }
                    }
                    selection.end(nil)
                } catch {
                    selection.end(error)
                }
            }
            defer {
                group.cancelAll()
                if let follower = selection.follower { tracker.leave(follower) }
            }
            guard let follower = try await selection.waitForFollower() else { return }
            try await follower.forward(to: response)
        }
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

/// Hands the follower that the first request creates to the task that writes the events, and
/// passes the end of the request stream on to it.
private final class RaceSelection: Sendable {
    private enum State {
        case choosing(waiter: CheckedContinuation<RaceFollower?, any Error>?)
        case following(RaceFollower)
        case ended(RaceFollower?, (any Error)?)
    }

    private let state = Mutex(State.choosing(waiter: nil))

    var follower: RaceFollower? {
        state.withLock { state in
            switch state {
            case .following(let follower), .ended(let follower?, _): follower
            case .choosing, .ended(nil, _): nil
            }
        }
    }

    func start(_ follower: RaceFollower) {
        let waiter: CheckedContinuation<RaceFollower?, any Error>? = state.withLock { state in
            guard case .choosing(let waiter) = state else { return nil }
            state = .following(follower)
            return waiter
        }
        waiter?.resume(returning: follower)
    }

    /// The requests ended: a half-close (`error` nil) or a failure.
    func end(_ error: (any Error)?) {
        let previous = state.withLock { state in
            defer {
                switch state {
                case .following(let follower): state = .ended(follower, error)
                case .choosing: state = .ended(nil, error)
                case .ended: break
                }
            }
            return state
        }
        switch previous {
        case .choosing(let waiter?):
            if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
        case .following(let follower):
            if let error { follower.fail(error) } else { follower.finish() }
        case .choosing(nil), .ended:
            break
        }
    }

    /// The follower, once the first request has named a race; nil if the client half-closed
    /// before it did.
    func waitForFollower() async throws -> RaceFollower? {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<RaceFollower?, any Error>? = state.withLock { state in
                switch state {
                case .choosing:
                    state = .choosing(waiter: continuation)
                    return nil
                case .following(let follower): return .success(follower)
                case .ended(_, let error?): return .failure(error)
                case .ended(let follower, nil): return .success(follower)
                }
            }
            if let result { continuation.resume(with: result) }
        }
    }
}
