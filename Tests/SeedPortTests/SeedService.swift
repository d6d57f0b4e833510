// The session's server code (seeds/000, 12:45 and 14:38), ported by changing imports only:
// GRPCCore → PitlaneCore, SwiftProtobuf → PitlaneProtobuf.
import PitlaneCore
import PitlaneProtobuf
import Synchronization

struct Service: SwiftKartService.SimpleServiceProtocol {
    private let database = RaceDB()
    private let tracker = RaceTracker()

    func listRaces(
        request: ListRacesRequest,
        context: ServerContext
    ) async throws -> ListRacesResponse {
        var response = ListRacesResponse()
        response.races = await database.listRaces(atMost: request.limit)
        return response
    }

    func followRace(
        request: RPCAsyncSequence<FollowRaceRequest, any Error>,
        response: RPCWriter<FollowRaceResponse>,
        context: ServerContext
    ) async throws {
        try await withThrowingTaskGroup { group in
            var iterator = request.makeAsyncIterator()
            guard let first = try await iterator.next() else { return }
            let eventTypes = Mutex(Set(first.eventTypes))

            group.addTask {
                let events = tracker.events(forRace: first.raceName).filter { event in
                    eventTypes.withLock { $0.contains(event.type) }
                }

                for await event in events {
                    var message = FollowRaceResponse()
                    switch event {
                    case .locations(let locations):
                        message.locations.karts = locations.map { location in
                            var kart = KartLocations.Kart()
                            kart.number = Int32(location.number)
                            kart.latitude = location.latitude
                            kart.longitude = location.longitude
                            return kart
                        }
                    case .standings(let standings):
                        message.standings.entries = standings.map { standing in
                            var entry = Standings.Entry()
                            entry.gapToLeader = .init(rounding: standing.delta, rule: .towardZero)
                            entry.kartNumber = Int32(standing.kartNumber)
                            entry.lap = Int32(standing.lap)
                            entry.position = Int32(standing.position)
                            return entry
                        }
                    }

                    try await response.write(message)
                }
            }

            while let next = try await iterator.next() {
                eventTypes.withLock { $0 = Set(next.eventTypes) }
            }

            group.cancelAll()
        }
    }
}
