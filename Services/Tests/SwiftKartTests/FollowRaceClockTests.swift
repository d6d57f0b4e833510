import PitlaneCore
import SwiftKart
import TestSupport
import Testing

/// FollowRace on a race whose ticks a ``ManualClock`` drives: what each tick delivers is
/// exact, so the test counts ticks of the simulation, never time.
@Suite("FollowRace on a stepped clock", .timeLimit(.minutes(2)))
struct FollowRaceClockTests {
    @Test("changing the event types mid-stream: standings start at once, come every 10 ticks, and stop when dropped")
    func changeEventTypes() async throws {
        let clock = ManualClock()
        var settings = RaceTracker.Settings()
        settings.timeSource = .manual(clock)
        let tracker = RaceTracker(settings: settings)
        let (tickInterval, standingsEvery) = (settings.tickInterval, settings.standingsEvery)
        let directory = try TemporaryDirectory()
        let database = try RaceDB(path: directory.path + "/races.sqlite")
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [RaceService(database: database, tracker: tracker)])
        let race = "Sonoma Sprint"

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await withGRPCClient(transport: transport.client) { client in
                let (changes, change) = AsyncStream.makeStream(of: [RaceEventType].self)
                change.yield([.kartLocations])
                try await SwiftKartService.Client(wrapping: client).followRace { writer in
                    for await eventTypes in changes {
                        try await writer.write(
                            .with {
                                $0.raceName = race
                                $0.eventTypes = eventTypes
                            })
                    }
                } onResponse: { response in
                    var messages = response.messages.makeAsyncIterator()
                    /// The next message's kind; the clock stands still while it is awaited.
                    func next() async throws -> String {
                        switch try await messages.next()?.event {
                        case .locations: "locations"
                        case .standings: "standings"
                        case nil: "end"
                        }
                    }
                    /// One tick: once the race waits for its next tick, the clock moves to it.
                    var tick = 0
                    func step() async {
                        await clock.waitForArmedTimers(atLeast: 1)
                        clock.advance(by: tickInterval)
                        tick += 1
                    }

                    // Locations only: the first tick's locations at once, then one per tick.
                    #expect(try await next() == "locations")
                    for _ in 0..<25 {
                        await step()
                        #expect(try await next() == "locations", "tick \(tick)")
                    }

                    // Standings asked for: the latest arrive with the clock standing still.
                    change.yield([.kartLocations, .standings])
                    #expect(try await next() == "standings")

                    // Both: locations every tick, standings with every tenth.
                    var standings = 0
                    for _ in 0..<25 {
                        await step()
                        #expect(try await next() == "locations", "tick \(tick)")
                        if tick % standingsEvery == 0 {
                            #expect(try await next() == "standings", "tick \(tick)")
                            standings += 1
                        }
                    }
                    #expect(standings == 3)

                    // Standings dropped: once the server has applied it, no standings come.
                    change.yield([.kartLocations])
                    try await eventually { tracker.eventTypesOfFollowers(of: race) == [[.kartLocations]] }
                    for _ in 0..<25 {
                        await step()
                        #expect(try await next() == "locations", "tick \(tick)")
                    }
                    change.finish()  // half-close: the server ends the RPC
                    #expect(try await next() == "end")
                }
            }
        }
    }
}
