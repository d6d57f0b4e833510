import PitlaneSQL
import PitlaneSQLite

/// The race schedule in a database (an SQLite file, or PostgreSQL shared by replicas): created
/// and migrated at open, seeded with `Schedule` when empty. Safe to share between tasks.
public final class RaceDB: Sendable {
    /// Requests for no limit (0 or less) get this many races, as the proto's default says.
    public static let defaultLimit: Int32 = 100
    /// No request gets more than this many races in one response.
    public static let maximumLimit: Int32 = 1_000

    public let database: any SQLDatabase

    /// Opens the SQLite file at `path` (`":memory:"` for a private one), creating the schema.
    public convenience init(path: String) throws {
        try self.init(database: SQLiteStore(path: path))
    }

    /// Opens the schedule in `database`, creating the schema (and seeding it) if needed.
    public init(database: any SQLDatabase) throws {
        try database.withConnection { connection in
            try Self.schema.apply(to: connection, legacyVersion: SchemaMigrations.sqliteUserVersion) { connection in
                if try Self.raceCount(in: connection) == 0 {
                    for race in Schedule.races { try Self.insert(race, into: connection) }
                }
            }
        }
        self.database = database
    }

    /// Up to `limit` races in start-time order; `limit` ≤ 0 means `defaultLimit`.
    public func listRaces(atMost limit: Int32) async throws -> [Race] {
        let count = Int(limit <= 0 ? Self.defaultLimit : min(limit, Self.maximumLimit))
        return try await database.withConnection { try Self.races(atMost: count, in: $0) }.map(\.message)
    }

    /// Up to `count` races in start-time order, with their coordinates.
    public func races(atMost count: Int) throws -> [ScheduledRace] {
        try database.withConnection { try Self.races(atMost: count, in: $0) }
    }

    /// The race called `name`, or nil when there is none.
    public func race(named name: String) async throws -> ScheduledRace? {
        try await database.withConnection { connection in
            guard
                let found = try connection.first(
                    """
                    SELECT id, name, location, latitude, longitude, start_time, laps, championship FROM races WHERE name = ?
                    """, .text(name), as: Self.race(from:))
            else { return nil }
            return try Self.withDrivers(found.1, raceID: found.0, connection)
        }
    }

    /// How many races the schedule holds.
    public func raceCount() throws -> Int {
        try database.withConnection { try Self.raceCount(in: $0) }
    }

    /// Adds a race to the schedule, or replaces the one with the same name.
    public func save(_ race: ScheduledRace) throws {
        try database.transactionBlocking { try Self.insert(race, into: $0) }
    }

    private static func races(atMost count: Int, in connection: any SQLConnection) throws -> [ScheduledRace] {
        try connection.all(
            """
            SELECT id, name, location, latitude, longitude, start_time, laps, championship
            FROM races ORDER BY start_time, id LIMIT ?
            """, .int(count), as: race(from:)
        )
        .map { try withDrivers($0.1, raceID: $0.0, connection) }
    }

    // MARK: Schema

    static let schema = SchemaMigrations(
        component: "races",
        steps: [
            (
                sqlite: """
                CREATE TABLE races (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    location TEXT NOT NULL,
                    latitude REAL NOT NULL,
                    longitude REAL NOT NULL,
                    start_time INTEGER NOT NULL,
                    laps INTEGER NOT NULL CHECK (laps > 0),
                    championship TEXT NOT NULL
                );
                CREATE INDEX races_by_start_time ON races (start_time);
                CREATE TABLE drivers (
                    race_id INTEGER NOT NULL REFERENCES races (id) ON DELETE CASCADE,
                    grid_position INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    PRIMARY KEY (race_id, grid_position)
                );
                """,
                postgres: """
                CREATE TABLE races (
                    id BIGSERIAL PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    location TEXT NOT NULL,
                    latitude DOUBLE PRECISION NOT NULL,
                    longitude DOUBLE PRECISION NOT NULL,
                    start_time BIGINT NOT NULL,
                    laps INTEGER NOT NULL CHECK (laps > 0),
                    championship TEXT NOT NULL
                );
                CREATE INDEX races_by_start_time ON races (start_time);
                CREATE TABLE drivers (
                    race_id BIGINT NOT NULL REFERENCES races (id) ON DELETE CASCADE,
                    grid_position INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    PRIMARY KEY (race_id, grid_position)
                );
                """
            )
        ])

    private static func raceCount(in connection: any SQLConnection) throws -> Int {
        try connection.first("SELECT count(*) FROM races", as: { $0.int(at: 0) }) ?? 0
    }

    private static func insert(_ race: ScheduledRace, into connection: any SQLConnection) throws {
        try connection.run("DELETE FROM races WHERE name = ?", .text(race.name))
        let raceID =
            try connection.first(
                """
                INSERT INTO races (name, location, latitude, longitude, start_time, laps, championship)
                VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id
                """, .text(race.name), .text(race.location), .real(race.latitude), .real(race.longitude),
                .integer(race.startTime), .int(race.laps), .text(race.championship), as: { $0.int64(at: 0) }) ?? 0
        for (position, name) in race.drivers.enumerated() {
            try connection.run(
                "INSERT INTO drivers (race_id, grid_position, name) VALUES (?, ?, ?)",
                .integer(raceID), .int(position), .text(name))
        }
    }

    private static func race(from row: any SQLRow) -> (Int64, ScheduledRace) {
        (
            row.int64(at: 0),
            ScheduledRace(
                name: row.text(at: 1), location: row.text(at: 2), latitude: row.double(at: 3), longitude: row.double(at: 4),
                startTime: row.int64(at: 5), laps: row.int(at: 6), championship: row.text(at: 7), drivers: [])
        )
    }

    private static func withDrivers(_ race: ScheduledRace, raceID: Int64, _ connection: any SQLConnection) throws -> ScheduledRace {
        var race = race
        race.drivers = try connection.all("SELECT name FROM drivers WHERE race_id = ? ORDER BY grid_position", .integer(raceID)) {
            $0.text(at: 0)
        }
        return race
    }
}
