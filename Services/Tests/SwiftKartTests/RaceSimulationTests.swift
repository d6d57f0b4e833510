import PitlaneCore
import PitlaneProtobuf
import Testing

@testable import SwiftKart

@Suite("Race simulation and followers", .timeLimit(.minutes(5)))
struct RaceSimulationTests {
    static let duckPondDash = Schedule.races.first { $0.name == "Duck Pond Dash" }!

    @Test("a race to the finish: positions 1...n, leader's gap zero, gaps never shrink down the order, laps never go back")
    func raceToTheFinish() throws {
        for race in Schedule.races {
            var simulation = RaceSimulation(race: race, seed: 7, tickSeconds: 0.5)
            var check = StandingsCheck(karts: race.drivers.count, laps: Int32(race.laps))
            while !simulation.isFinished {
                simulation.advance()
                try #require(simulation.tick < 100_000, "\(race.name) never ends")
                check.check(simulation.standings())
            }
            #expect(check.everyKartFinished, "\(race.name)")
        }
    }

    @Test("the order changes during a race: karts overtake")
    func overtakes() {
        var simulation = RaceSimulation(race: Self.duckPondDash, seed: 1, tickSeconds: 0.5)
        var leaders: Set<Int32> = []
        var orders: Set<[Int32]> = []
        while !simulation.isFinished {
            simulation.advance()
            let order = simulation.standings().entries.map(\.kartNumber)
            orders.insert(order)
            leaders.insert(order[0])
        }
        #expect(orders.count > 3, "the order changed \(orders.count - 1) times")
    }

    @Test("the same seed replays the same race; another seed runs a different one")
    func deterministic() {
        func run(seed: UInt64) -> [[Int32]] {
            var simulation = RaceSimulation(race: Self.duckPondDash, seed: seed, tickSeconds: 1)
            var orders: [[Int32]] = []
            while !simulation.isFinished {
                simulation.advance()
                orders.append(simulation.standings().entries.map(\.kartNumber))
            }
            return orders
        }
        #expect(run(seed: 42) == run(seed: 42))
        #expect(run(seed: 42) != run(seed: 43))
    }

    @Test("karts drive a closed track within a few hundred metres of the race's location")
    func onTheTrack() {
        var simulation = RaceSimulation(race: Self.duckPondDash, seed: 3, tickSeconds: 0.25)
        let stamp = Google_Protobuf_Timestamp(seconds: 1_781_198_600)
        while !simulation.isFinished {
            simulation.advance()
            for kart in simulation.locations(recordedAt: stamp).karts {
                let north = (kart.latitude - Self.duckPondDash.latitude) * 111_320
                let east = (kart.longitude - Self.duckPondDash.longitude) * 111_320 * 0.795  // cos(37.3°)
                #expect((north * north + east * east).squareRoot() < 300)
                #expect(kart.recordedAt == stamp)
            }
        }
        let track = simulation.track
        let start = track.coordinate(atDistance: 0)
        let lapLater = track.coordinate(atDistance: track.length)
        #expect(abs(start.latitude - lapLater.latitude) < 1e-9 && abs(start.longitude - lapLater.longitude) < 1e-9)
    }

    @Test("a slow follower gets the latest locations and every standings update, in order")
    func conflation() async throws {
        let follower = RaceFollower(eventTypes: [.kartLocations, .standings], standingsBacklog: 64)
        for tick in 1...100 {
            follower.offer(.locations(.with { $0.locations.karts = [.with { $0.number = Int32(tick) }] }), tick: tick)
            if tick % 10 == 0 {
                follower.offer(.standings(.with { $0.standings.entries = [.with { $0.lap = Int32(tick) }] }), tick: tick)
            }
        }
        follower.finish()
        var received: [String] = []
        for try await event in follower {
            switch event.event {
            case .locations(let locations): received.append("L\(locations.karts[0].number)")
            case .standings(let standings): received.append("S\(standings.entries[0].lap)")
            case nil: Issue.record("an empty event")
            }
        }
        #expect(received == (1...9).map { "S\($0 * 10)" } + ["L100", "S100"])
    }

    @Test("a follower that falls too far behind is ended with RESOURCE_EXHAUSTED")
    func backlog() async throws {
        let follower = RaceFollower(eventTypes: [.standings], standingsBacklog: 8)
        for tick in 1...9 { follower.offer(.standings(FollowRaceResponse()), tick: tick) }
        await #expect(throws: RPCError.self) { for try await _ in follower {} }
        do {
            _ = try await follower.next()
        } catch let error as RPCError {
            #expect(error.code == .resourceExhausted)
        }
    }

    @Test("changing the event types drops pending events of types no longer wanted")
    func changeTypes() async throws {
        let follower = RaceFollower(eventTypes: [.kartLocations, .standings], standingsBacklog: 8)
        follower.offer(.standings(FollowRaceResponse()), tick: 1)
        follower.offer(.locations(FollowRaceResponse()), tick: 2)
        follower.eventTypes = [.kartLocations]
        follower.offer(.standings(FollowRaceResponse()), tick: 3)
        follower.finish()
        var count = 0
        for try await _ in follower { count += 1 }
        #expect(count == 1)
    }

    @Test("an event offered twice (a race's latest, and the same tick's publish) is delivered once")
    func noDuplicates() async throws {
        let follower = RaceFollower(eventTypes: [.standings], standingsBacklog: 8)
        follower.offer(.standings(FollowRaceResponse()), tick: 10)
        follower.offer(.standings(FollowRaceResponse()), tick: 10)
        follower.offer(.standings(FollowRaceResponse()), tick: 5)
        follower.offer(.standings(FollowRaceResponse()), tick: 20)
        follower.finish()
        var count = 0
        for try await _ in follower { count += 1 }
        #expect(count == 2)
    }
}
