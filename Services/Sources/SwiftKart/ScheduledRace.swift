import PitlaneProtobuf

/// A race on the schedule, with what the simulation needs beyond the `Race` message: where
/// on Earth the track is.
public struct ScheduledRace: Sendable, Hashable {
    public var name: String
    public var location: String
    public var latitude: Double
    public var longitude: Double
    /// Seconds since 1970-01-01 UTC.
    public var startTime: Int64
    public var laps: Int
    public var championship: String
    /// In grid order; driver `i` drives kart number `i + 1`.
    public var drivers: [String]

    public init(
        name: String, location: String, latitude: Double, longitude: Double,
        startTime: Int64, laps: Int, championship: String, drivers: [String]
    ) {
        self.name = name
        self.location = location
        self.latitude = latitude
        self.longitude = longitude
        self.startTime = startTime
        self.laps = laps
        self.championship = championship
        self.drivers = drivers
    }

    /// The race as the API describes it.
    public var message: Race {
        var race = Race()
        race.name = name
        race.location = location
        race.startTime = Google_Protobuf_Timestamp(seconds: startTime)
        race.laps = Int32(laps)
        race.championship = championship
        race.drivers = drivers
        return race
    }
}
