/// Schema versions of one component (the order log, the chat rooms...), applied in order. The
/// table `pitlane_schema` records how many of each component's steps ran, in the same
/// transaction as the steps, so a crash leaves either all or none of a step. Replicas that
/// start together take turns (an advisory lock on PostgreSQL, SQLite's write lock).
public struct SchemaMigrations: Sendable {
    /// The component's name: its row's key in `pitlane_schema`.
    public let component: String
    /// Each step as SQL for each dialect.
    public let steps: [(sqlite: String, postgres: String)]

    /// Migrations for `component`: `steps` run in order, each once per database; add new steps at the end rather than
    /// editing ones that may have run.
    public init(component: String, steps: [(sqlite: String, postgres: String)]) {
        self.component = component
        self.steps = steps
    }

    /// Brings the schema up to date; `seed` runs in the same transaction after the steps (to
    /// add rows the component needs once, such as an epoch). `legacyVersion` is asked for
    /// the version when the component has no row yet (schemas from before this table).
    public func apply(
        to connection: any SQLConnection, legacyVersion: (any SQLConnection) throws -> Int = { _ in 0 },
        seed: (any SQLConnection) throws -> Void = { _ in }
    ) throws {
        try connection.transaction {
            if connection.dialect == .postgres {
                // 0x7069746c = "pitl": one lock for every migration of every component.
                try connection.run("SELECT pg_advisory_xact_lock(1885959276)")
            }
            try connection.execute("CREATE TABLE IF NOT EXISTS pitlane_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
            let recorded = try connection.first("SELECT version FROM pitlane_schema WHERE component = ?", .text(component)) {
                $0.int(at: 0)
            }
            let version = try recorded ?? legacyVersion(connection)
            guard version <= steps.count else {
                throw DatabaseError(.other, message: "\(component) schema version \(version) is newer than this server's (\(steps.count))")
            }
            for step in steps[version...] {
                try connection.execute(connection.dialect == .postgres ? step.postgres : step.sqlite)
            }
            try connection.run(
                """
                INSERT INTO pitlane_schema (component, version) VALUES (?, ?)
                ON CONFLICT (component) DO UPDATE SET version = excluded.version
                """, .text(component), .int(steps.count))
            try seed(connection)
        }
    }

    /// The version SQLite files from before `pitlane_schema` kept in `PRAGMA user_version`
    /// (a `legacyVersion` for components whose only table lived there); 0 for PostgreSQL.
    public static func sqliteUserVersion(_ connection: any SQLConnection) throws -> Int {
        guard connection.dialect == .sqlite else { return 0 }
        return try connection.first("PRAGMA user_version", as: { $0.int(at: 0) }) ?? 0
    }
}
