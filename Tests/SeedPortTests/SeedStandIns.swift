// The session's RaceDB and RaceTracker are app code the talk does not show; these stand-ins
// give the ported service something deterministic to serve.
import PitlaneProtobuf

struct RaceDB: Sendable {
    func listRaces(atMost limit: Int32) async -> [Race] {
        var race = Race()
        race.name = "Duck Pond Dash"
        race.location = "Apple Park, Cupertino"
        race.startTime = .init(roundingTimeIntervalSince1970: 1_781_198_600)
        race.laps = 6
        race.championship = "Corporate Cup"
        race.drivers = ["Monty", "Pepper", "Mycroft", "Pancakes", "Duke", "Kiko", "Sissi", "Bo"]
        return Array(repeating: race, count: Int(min(limit, 3)))
    }
}

struct KartLocation: Sendable {
    var number: Int
    var latitude: Double
    var longitude: Double
}

struct Standing: Sendable {
    var kartNumber: Int
    var delta: Double
    var lap: Int
    var position: Int
}

enum RaceEvent: Sendable {
    case locations([KartLocation])
    case standings([Standing])

    var type: RaceEventType {
        switch self {
        case .locations: .kartLocations
        case .standings: .standings
        }
    }
}

struct RaceTracker: Sendable {
    /// Ten ticks: locations every tick, standings every fifth.
    func events(forRace name: String) -> AsyncStream<RaceEvent> {
        AsyncStream { continuation in
            for tick in 0..<10 {
                continuation.yield(.locations([KartLocation(number: 7, latitude: 37.3349 + Double(tick) * 1e-5, longitude: -122.009)]))
                if tick % 5 == 4 {
                    continuation.yield(
                        .standings([
                            Standing(kartNumber: 7, delta: 0, lap: tick / 5 + 1, position: 1),
                            Standing(kartNumber: 3, delta: 1.25, lap: tick / 5 + 1, position: 2),
                        ]))
                }
            }
            continuation.finish()
        }
    }
}
