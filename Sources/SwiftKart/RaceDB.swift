import PitlaneSQLite
import Synchronization

/// The race schedule in an SQLite file: created and migrated at open, seeded with `Schedule`
/// when empty. Safe to share between tasks.
public final class RaceDB: Sendable {
    /// Requests for no limit (0 or less) get this many races, as the proto's default says.
    public static let defaultLimit: Int32 = 100
    /// No request gets more than this many races in one response.
    public static let maximumLimit: Int32 = 1_000

    private let connection: Mutex<SQLiteDatabase>

    /// Opens the database at `path` (`":memory:"` for a private one), creating the schema.
    public init(path: String) throws {
        let database = try SQLiteDatabase(path: path)
        try Self.migrate(database)
        connection = Mutex(database)
    }

    /// Up to `limit` races in start-time order; `limit` ≤ 0 means `defaultLimit`.
    public func listRaces(atMost limit: Int32) async throws -> [Race] {
        let count = limit <= 0 ? Self.defaultLimit : min(limit, Self.maximumLimit)
        return try races(atMost: Int(count)).map(\.message)
    }

    /// Up to `count` races in start-time order, with their coordinates.
    public func races(atMost count: Int) throws -> [ScheduledRace] {
        try connection.withLock { database in
            let statement = try database.prepare("""
                SELECT id, name, location, latitude, longitude, start_time, laps, championship
                FROM races ORDER BY start_time, id LIMIT ?
                """)
            try statement.bind(.int(count))
            var races: [(id: Int64, race: ScheduledRace)] = []
            while try statement.step() { races.append(Self.race(from: statement)) }
            return try races.map { try Self.withDrivers($0.race, raceID: $0.id, database) }
        }
    }

    /// The race called `name`, or nil when there is none.
    public func race(named name: String) async throws -> ScheduledRace? {
        try connection.withLock { database in
            let statement = try database.prepare("""
                SELECT id, name, location, latitude, longitude, start_time, laps, championship
                FROM races WHERE name = ?
                """)
            try statement.bind(.text(name))
            guard try statement.step() else { return nil }
            let (id, race) = Self.race(from: statement)
            return try Self.withDrivers(race, raceID: id, database)
        }
    }

    /// How many races the schedule holds.
    public func raceCount() throws -> Int {
        try connection.withLock { try Self.raceCount(in: $0) }
    }

    /// Adds a race to the schedule, or replaces the one with the same name.
    public func save(_ race: ScheduledRace) throws {
        try connection.withLock { try Self.insert(race, into: $0) }
    }

    // MARK: Schema

    /// Schema versions, applied in order; `PRAGMA user_version` records how many ran.
    private static let migrations = [
        """
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
    ]

    private static func migrate(_ database: SQLiteDatabase) throws {
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON")
        let version = try database.userVersion
        guard version <= migrations.count else {
            throw SQLiteError(code: 0, message: "database schema version \(version) is newer than this server (\(migrations.count))")
        }
        try database.transaction {
            for migration in migrations[version...] { try database.execute(migration) }
            try database.setUserVersion(migrations.count)
            if try raceCount(in: database) == 0 {
                for race in Schedule.races { try insert(race, into: database) }
            }
        }
    }

    private static func raceCount(in database: SQLiteDatabase) throws -> Int {
        let count = try database.prepare("SELECT count(*) FROM races")
        return try count.step() ? count.int(at: 0) : 0
    }

    private static func insert(_ race: ScheduledRace, into database: SQLiteDatabase) throws {
        try database.prepare("DELETE FROM races WHERE name = ?").bind(.text(race.name)).run()
        try database.prepare("""
            INSERT INTO races (name, location, latitude, longitude, start_time, laps, championship)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """)
            .bind(.text(race.name), .text(race.location), .real(race.latitude), .real(race.longitude),
                  .integer(race.startTime), .int(race.laps), .text(race.championship))
            .run()
        let raceID = database.lastInsertedRowID
        let driver = try database.prepare("INSERT INTO drivers (race_id, grid_position, name) VALUES (?, ?, ?)")
        for (position, name) in race.drivers.enumerated() {
            try driver.bind(.integer(raceID), .int(position), .text(name)).run()
        }
    }

    private static func race(from row: SQLiteStatement) -> (Int64, ScheduledRace) {
        (row.int64(at: 0), ScheduledRace(
            name: row.text(at: 1), location: row.text(at: 2), latitude: row.double(at: 3), longitude: row.double(at: 4),
            startTime: row.int64(at: 5), laps: row.int(at: 6), championship: row.text(at: 7), drivers: []))
    }

    private static func withDrivers(_ race: ScheduledRace, raceID: Int64, _ database: SQLiteDatabase) throws -> ScheduledRace {
        let statement = try database.prepare("SELECT name FROM drivers WHERE race_id = ? ORDER BY grid_position")
        try statement.bind(.integer(raceID))
        var race = race
        while try statement.step() { race.drivers.append(statement.text(at: 0)) }
        return race
    }
}
