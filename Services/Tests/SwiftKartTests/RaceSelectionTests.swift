import PitlaneCore
import TestSupport
import Testing

@testable import SwiftKart

/// `RaceSelection`: a FollowRace RPC's requests as they are delivered, before and after its
/// follower exists. No sockets: deliveries are called as the transport would call them.
@Suite("Race selection", .timeLimit(.minutes(1)))
struct RaceSelectionTests {
    struct Broken: Error {}

    static func request(_ race: String = "", types: [RaceEventType]) -> FollowRaceRequest {
        .with {
            $0.raceName = race
            $0.eventTypes = types
        }
    }

    static func follower() -> RaceFollower {
        RaceFollower(eventTypes: [.kartLocations], standingsBacklog: 8)
    }

    @Test("the first request reaches a task that waits for it; later ones go to the follower")
    func waitingTask() async throws {
        let selection = RaceSelection(tracker: RaceTracker())
        async let first = selection.firstRequest()
        try await Task.sleep(for: .milliseconds(10))  // most often the task waits first; either order is correct
        selection.receive(.success(Self.request("Duck Pond Dash", types: [.kartLocations])))
        #expect(try await first?.raceName == "Duck Pond Dash")
        let follower = Self.follower()
        selection.start(follower)
        selection.receive(.success(Self.request(types: [.standings])))
        #expect(follower.eventTypes == [.standings])
        selection.receive(.success(nil))
        follower.offer(.standings(FollowRaceResponse()), tick: 1)  // an ended follower takes no more
        #expect(try await follower.next() == nil)
    }

    @Test("what arrives before the task asks, and while it looks the race up, reaches the follower in order")
    func earlyRequests() async throws {
        let selection = RaceSelection(tracker: RaceTracker())
        selection.receive(.success(Self.request("Zuera Finale", types: [.kartLocations])))
        selection.receive(.success(Self.request(types: [.standings])))
        #expect(try await selection.firstRequest()?.raceName == "Zuera Finale")
        selection.receive(.success(Self.request(types: [.kartLocations, .standings])))
        selection.receive(.failure(Broken()))
        selection.receive(.success(Self.request(types: [.standings])))  // after the end: dropped
        let follower = Self.follower()
        selection.start(follower)
        #expect(follower.eventTypes == [.kartLocations, .standings])
        await #expect(throws: Broken.self) { _ = try await follower.next() }
    }

    @Test("a half-close before any request: no first request, and the RPC follows nothing")
    func halfCloseFirst() async throws {
        let selection = RaceSelection(tracker: RaceTracker())
        selection.receive(.success(nil))
        #expect(try await selection.firstRequest() == nil)
    }

    @Test("the request stream failing before the first request fails the wait")
    func failureFirst() async throws {
        let selection = RaceSelection(tracker: RaceTracker())
        let first = Task { try await selection.firstRequest() }
        selection.receive(.failure(Broken()))
        await #expect(throws: Broken.self) { _ = try await first.value }
    }

    @Test("a task cancelled while it waits for the first request stops waiting")
    func cancelledWait() async throws {
        let selection = RaceSelection(tracker: RaceTracker())
        let waiting = Task { try await selection.firstRequest() }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        selection.receive(.success(Self.request("Duck Pond Dash", types: [.kartLocations])))  // nobody waits: dropped
    }
}
