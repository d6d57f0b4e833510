// The session's client calls (seeds/000, 7:14 and the live view's .task), ported by changing
// imports and the transport constructor, run against the ported server.
import PitlaneCore
import PitlaneProtobuf
import Testing

@Suite("The session's code, ported by imports only", .timeLimit(.minutes(5)))
struct SeedClientTests {
    @Test("ListRaces as the schedule view calls it")
    func listRaces() async throws {
        try await withSeedServer { transport in
            var races: [(name: String, laps: Int, drivers: [String])] = []
            try await withGRPCClient(transport: transport) { client in
                let kart = SwiftKartService.Client(wrapping: client)
                let request = ListRacesRequest()
                let response = try await kart.listRaces(request)
                races = response.races.map { race in
                    (name: race.name, laps: Int(race.laps), drivers: race.drivers)
                }
            }
            #expect(races.count == 3)
            #expect(races.first?.name == "Duck Pond Dash")
            #expect(races.first?.drivers.count == 8)
        }
    }

    @Test("FollowRace as the live view calls it: locations, then standings when asked")
    func followRace() async throws {
        try await withSeedServer { transport in
            let (stream, continuation) = AsyncStream.makeStream(of: Bool.self)
            continuation.yield(true)
            let events = try await withGRPCClient(transport: transport) { client in
                let kart = SwiftKartService.Client(wrapping: client)
                return try await kart.followRace { requestStream in
                    for await showLeaderboard in stream {
                        var message = FollowRaceRequest()
                        message.raceName = "Duck Pond Dash"
                        message.eventTypes = [.kartLocations]
                        if showLeaderboard {
                            message.eventTypes.append(.standings)
                        }
                        try await requestStream.write(message)
                    }
                } onResponse: { responseStream in
                    var received: [FollowRaceResponse.OneOf_Event] = []
                    for try await message in responseStream.messages {
                        if let event = message.event {
                            received.append(event)
                        }
                        // The race's ten ticks are in: half-close, which ends the RPC.
                        if received.count == 12 { continuation.finish() }
                    }
                    return received
                }
            }
            let locations = events.filter { if case .locations = $0 { true } else { false } }
            let standings = events.compactMap { if case .standings(let standings) = $0 { standings } else { nil } }
            #expect(locations.count == 10)
            #expect(standings.count == 2)
            #expect(standings.first?.entries.last?.gapToLeader.timeInterval == 1.25)
        }
    }

    func withSeedServer(_ body: (InProcessTransport.Client) async throws -> Void) async throws {
        let transport = InProcessTransport()
        let server = GRPCServer(transport: transport.server, services: [Service()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            try await body(transport.client)
        }
    }
}
