import PitlaneSQL
import SwiftKart
import TestSupport
import Testing

/// Two replicas' race trackers in one process, each with its own pool and listener on one
/// PostgreSQL database: one simulation per race, mirrored by the other; when the leader stops,
/// the other continues the same race.
@Suite("Races on one PostgreSQL database", .timeLimit(.minutes(3)))
struct RaceReplicaTests {
    static func trackers(_ url: String) throws -> (RaceTracker, RaceTracker, [RaceCoordinator]) {
        var coordinators: [RaceCoordinator] = []
        func tracker() throws -> RaceTracker {
            var settings = RaceTracker.Settings()
            settings.tickInterval = .milliseconds(40)
            settings.speed = 25
            settings.seed = 7
            settings.coordinator = try RaceCoordinator(database: TestBackend.postgresDatabase(url))
            coordinators.append(settings.coordinator!)
            return RaceTracker(settings: settings)
        }
        return (try tracker(), try tracker(), coordinators)
    }

    static let race = ScheduledRace(
        name: "Replica Cup", location: "Paddock", latitude: 50.3356, longitude: 6.9475,
        startTime: 1_700_000_000, laps: 3, championship: "Test Series", drivers: ["Ada", "Grace", "Alan", "Edsger"])

    /// Every standings update `follower` receives until the race is over (or `until` says stop).
    static func standings(_ follower: RaceFollower, until: @Sendable (Standings) -> Bool = { _ in false }) async throws -> [Standings] {
        var received: [Standings] = []
        for try await response in follower {
            guard case .standings(let standings) = response.event else { continue }
            received.append(standings)
            if until(standings) { break }
        }
        return received
    }

    @Test("followers on both replicas get the same standings for the same tick, and the race ends once")
    func oneRaceEverywhere() async throws {
        let (a, b, coordinators) = try Self.trackers(try await TestPostgres.freshDatabase())
        defer { coordinators.forEach { $0.stop() } }
        let race = Self.race
        let onA = a.follow(race, eventTypes: [.standings])
        let onB = b.follow(race, eventTypes: [.standings])
        async let seenOnA = Self.standings(onA)
        async let seenOnB = Self.standings(onB)
        let (fromA, fromB) = try await (seenOnA, seenOnB)
        #expect(!fromA.isEmpty && !fromB.isEmpty)
        #expect(fromA.last == fromB.last)
        // Whoever joined later may have missed the first ones; what both have is identical.
        let (shorter, longer) = fromA.count <= fromB.count ? (fromA, fromB) : (fromB, fromA)
        #expect(Array(longer.suffix(shorter.count)) == shorter)
    }

    @Test("the leader's followers leave: the other replica takes the race over and continues it, not from the start")
    func takeover() async throws {
        let (a, b, coordinators) = try Self.trackers(try await TestPostgres.freshDatabase())
        defer { coordinators.forEach { $0.stop() } }
        let race = Self.race
        // A leads: it follows first, and has run a few laps' standings before B comes.
        let onA = a.follow(race, eventTypes: [.standings])
        let before = try await Self.standings(onA) { standings in (standings.entries.first?.lap ?? 0) >= 2 }
        let onB = b.follow(race, eventTypes: [.standings])
        a.leave(onA)
        let afterTakeover = try await Self.standings(onB)
        let lapWhenALeft = before.last?.entries.first?.lap ?? 0
        #expect(afterTakeover.count > 1)
        #expect((afterTakeover.first?.entries.first?.lap ?? 0) >= lapWhenALeft, "B started the race over")
        let leaderLaps = afterTakeover.compactMap { $0.entries.first?.lap }
        #expect(leaderLaps == leaderLaps.sorted(), "laps went back")
        #expect(afterTakeover.last?.entries.allSatisfy { $0.lap == Int32(race.laps) } == true, "the race did not finish")
    }
}
