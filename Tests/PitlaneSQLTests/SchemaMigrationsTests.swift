import PitlaneCore
import PitlaneSQL
import PitlaneSQLite
import Testing

/// The storage interface on its embedded engine (an in-memory SQLite database): schema
/// migrations applied once and recorded, a schema newer than the code refused, and database
/// failures as the statuses callers act on.
@Suite("PitlaneSQL", .timeLimit(.minutes(1)))
struct SchemaMigrationsTests {
    static let migrations = SchemaMigrations(
        component: "notes",
        steps: [
            (
                sqlite: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",
                postgres: "CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, text TEXT NOT NULL)"
            ),
            (
                sqlite: "ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
                postgres: "ALTER TABLE notes ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT false"
            ),
        ])

    func version(_ connection: any SQLConnection) throws -> Int? {
        try connection.first("SELECT version FROM pitlane_schema WHERE component = ?", .text("notes")) { $0.int(at: 0) }
    }

    @Test("steps run once, in order, with the seed in their transaction; the version is recorded")
    func appliedOnce() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        var seeded = 0
        try Self.migrations.apply(
            to: database,
            seed: { connection in
                seeded += 1
                try connection.run("INSERT INTO notes (text, pinned) VALUES (?, 1)", .text("first"))
            })
        #expect(try version(database) == 2)
        // Again: nothing to run; the seed runs (it is the caller's to make idempotent), the table keeps its row.
        try Self.migrations.apply(to: database, seed: { _ in seeded += 1 })
        #expect(seeded == 2)
        #expect(try database.first("SELECT count(*) FROM notes") { $0.int(at: 0) } == 1)
    }

    @Test("a schema newer than the code is refused, and nothing changes")
    func newerSchema() throws {
        let database = try SQLiteDatabase(path: ":memory:")
        try Self.migrations.apply(to: database)
        try database.run("UPDATE pitlane_schema SET version = 7 WHERE component = ?", .text("notes"))
        #expect(throws: DatabaseError.self) { try Self.migrations.apply(to: database) }
        #expect(try version(database) == 7)
    }

    @Test("database failures become the statuses callers act on, without the server's internals")
    func statuses() {
        #expect(DatabaseError(.unavailable, message: "connection refused").rpcError.code == .unavailable)
        #expect(DatabaseError(.timeout, message: "canceling statement").rpcError.code == .unavailable)
        #expect(DatabaseError(.busy, message: "pool exhausted").rpcError.code == .unavailable)
        let refused = DatabaseError(.constraint, code: "23505", message: "duplicate key value violates unique constraint").rpcError
        #expect(refused.code == .internal && !refused.message.contains("duplicate"))
        #expect(DatabaseError(.other, code: "42P01", message: "no such table").description == "database (42P01): no such table")
    }
}
