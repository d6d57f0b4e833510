import Foundation
import PitlanePostgres
import PitlaneSQL
import PitlaneSQLite
import Synchronization

/// The databases a storage test runs on: each such test runs once per backend.
public enum TestBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite, postgres

    public var description: String { rawValue }

    /// A fresh, empty database of this kind: an SQLite file in `directory`, or a new database
    /// on this test process's PostgreSQL server.
    public func makeDatabase(in directory: TemporaryDirectory, name: String = "state") async throws -> any SQLDatabase {
        switch self {
        case .sqlite: try SQLiteStore(path: directory.path + "/\(name).sqlite", synchronous: "NORMAL")
        case .postgres: try Self.postgresDatabase(try await TestPostgres.freshDatabase())
        }
    }

    /// The database a server's `--database` names: a PostgreSQL URL or an SQLite file.
    public static func open(_ location: String) throws -> any SQLDatabase {
        location.hasPrefix("postgres") ? try postgresDatabase(location) : try SQLiteStore(path: location)
    }

    /// A pool on the PostgreSQL database at `url`.
    public static func postgresDatabase(_ url: String) throws -> any SQLDatabase {
        try PostgresDatabase(settings: PostgresSettings(url: url), maxConnections: 4)
    }

    /// What a server's `--database` takes for a fresh database of this kind.
    public func databaseArgument(in directory: TemporaryDirectory) async throws -> String {
        switch self {
        case .sqlite: directory.path + "/state.sqlite"
        case .postgres: try await TestPostgres.freshDatabase()
        }
    }
}

/// A throwaway PostgreSQL server for this test process (`scripts/postgres start --fast` in
/// /tmp), started at first use and stopped when the process exits. Each test takes a database
/// of its own on it (`freshDatabase()`), so tests do not see each other's rows.
public enum TestPostgres {
    private static let server = Mutex<Result<String, any Error>?>(nil)

    /// The URL of the server's `pitlane` database.
    public static func url() async throws -> String {
        try await onDedicatedThread {
            try server.withLock { started in
                if let started { return try started.get() }
                let result = Result { try start() }
                started = result
                return try result.get()
            }
        }
    }

    /// A new, empty database on the server; its URL.
    public static func freshDatabase() async throws -> String {
        let base = try await url()
        let name = "t_" + String(UInt64.random(in: 1 ... .max), radix: 36)
        try await onDedicatedThread {
            let connection = try PostgresConnection(PostgresSettings(url: base))
            try connection.execute("CREATE DATABASE \(name)")
        }
        return base.replacingOccurrences(of: "/pitlane?", with: "/\(name)?")
    }

    private static func start() throws -> String {
        let root = Peers.repositoryRoot
        let script = root.appending(path: "scripts/postgres").path
        let path = "/tmp/pitlane-pg-\(getpid())"
        let (status, output) = try runScript(script, ["start", path, "--fast"])
        guard status == 0, let url = output.split(separator: "\n").last.map(String.init), url.hasPrefix("postgres") else {
            throw DatabaseError(.unavailable, message: "scripts/postgres start failed (\(status)): \(output)")
        }
        runningServer = (script, path)
        atexit(stopTestPostgres)
        return url
    }

    /// Runs `script` to its exit, its output into a file. Spawned by hand, with every
    /// descriptor above 2 closed: the server it starts lives on and must not hold the test
    /// process's pipes open (Foundation's `Process` would wait for them).
    static func runScript(_ script: String, _ arguments: [String]) throws -> (Int32, String) {
        let outputPath = "/tmp/pitlane-pg-\(getpid())-\(UInt32.random(in: 0 ... .max)).out"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        _ = closeFrom(&actions, 3)
        let argv = ([script] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, script, &actions, nil, argv, environ)
        guard spawned == 0 else { throw DatabaseError(.other, message: "cannot run \(script): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return ((status >> 8) & 0xff, text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// The script and directory of this process's PostgreSQL server, for `stopTestPostgres`.
nonisolated(unsafe) private var runningServer: (script: String, directory: String)?

/// At exit: stops the server and deletes its directory.
private func stopTestPostgres() {
    guard let (script, directory) = runningServer else { return }
    _ = try? TestPostgres.runScript(script, ["stop", directory])
    try? FileManager.default.removeItem(atPath: directory)
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (the child closes every descriptor from
/// the given one up), which Swift's Glibc module leaves out; looked up by name.
private let closeFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
    guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
        fatalError("glibc 2.34 or newer is needed: posix_spawn_file_actions_addclosefrom_np is missing")
    }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()
