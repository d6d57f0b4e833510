import Foundation
import PitlanePostgres
import PitlaneSQL
import PitlaneSQLite

extension CommandLineOptions {
    /// The flags of a server that keeps state in a database: `--database` (an SQLite file, or a
    /// `postgres://` / `postgresql://` URL shared by replicas), `--db-connections` (the
    /// PostgreSQL pool's size) and `--db-statement-timeout` (milliseconds).
    public static let databaseOptions: Set<String> = ["database", "db-connections", "db-statement-timeout"]

    /// The database `--database` names (default: the SQLite file `defaultPath`), opened and,
    /// for PostgreSQL, reachable; and how to name it in logs (a URL without its password).
    /// `synchronous` is SQLite's `PRAGMA synchronous`.
    public func database(defaultPath: String, synchronous: String = "FULL") throws -> (database: any SQLDatabase, name: String) {
        let location = self["database"] ?? defaultPath
        guard !location.isEmpty else { throw UsageError(description: "--database needs a file path or a postgres:// URL") }
        guard location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") else {
            try makeParentDirectory(of: location)
            return (try SQLiteStore(path: location, synchronous: synchronous), location)
        }
        var settings = PostgresSettings(url: location)
        settings.statementTimeoutMilliseconds = max(1, try integer("db-statement-timeout", default: settings.statementTimeoutMilliseconds))
        let database = try PostgresDatabase(settings: settings, maxConnections: max(1, try integer("db-connections", default: 16)))
        return (database, Self.withoutPassword(location))
    }

    /// `postgres://user:secret@host/db` as `postgres://user@host/db`.
    static func withoutPassword(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@") else { return url }
        let credentials = url[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + String(url[at...])
    }
}
