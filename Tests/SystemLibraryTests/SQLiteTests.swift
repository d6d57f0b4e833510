import CSQLite
import Foundation
import Testing

@Suite("SQLite through CSQLite", .timeLimit(.minutes(5)))
struct SQLiteTests {
    /// SQLite's destructor sentinel meaning "copy the bytes now"; a C macro Swift cannot import.
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    @Test("a table written to a temporary file reads back after reopening")
    func tableRoundTrip() throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("pitlane-sqlite-\(UInt64.random(in: 0...UInt64.max)).db").path
        defer { try? FileManager.default.removeItem(atPath: path) }

        var database: OpaquePointer?
        #expect(sqlite3_open(path, &database) == SQLITE_OK)
        #expect(sqlite3_exec(database, "CREATE TABLE races (name TEXT NOT NULL, laps INTEGER)", nil, nil, nil) == SQLITE_OK)
        var insert: OpaquePointer?
        #expect(sqlite3_prepare_v2(database, "INSERT INTO races VALUES (?, ?)", -1, &insert, nil) == SQLITE_OK)
        for (name, laps) in [("Duck Pond Dash", 12), ("Infinite Loop Sprint", 20)] {
            sqlite3_bind_text(insert, 1, name, -1, transient)
            sqlite3_bind_int(insert, 2, Int32(laps))
            #expect(sqlite3_step(insert) == SQLITE_DONE)
            sqlite3_reset(insert)
        }
        sqlite3_finalize(insert)
        #expect(sqlite3_close(database) == SQLITE_OK)

        #expect(sqlite3_open_v2(path, &database, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(database) }
        var select: OpaquePointer?
        #expect(sqlite3_prepare_v2(database, "SELECT name, laps FROM races ORDER BY laps", -1, &select, nil) == SQLITE_OK)
        defer { sqlite3_finalize(select) }
        var rows: [String] = []
        while sqlite3_step(select) == SQLITE_ROW {
            rows.append("\(String(cString: sqlite3_column_text(select, 0))):\(sqlite3_column_int(select, 1))")
        }
        #expect(rows == ["Duck Pond Dash:12", "Infinite Loop Sprint:20"])
    }
}
