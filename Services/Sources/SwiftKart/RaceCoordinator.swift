import PitlaneLive
import PitlaneSQL
import Synchronization

/// One simulation per race in a whole deployment: replicas of `swiftkart-server` on one
/// PostgreSQL database agree, per race, on which of them runs it.
///
/// The replica that holds the race's advisory lock (`pg_try_advisory_lock`, on a session of its
/// own) leads: it paces the race's ticks, announces each on `RaceCoordinator.channel`, and
/// checkpoints the tick in `race_runs` at every standings tick. A simulation's state is a pure
/// function of its race, seed, tick length and tick number, so the checkpoint is those numbers:
/// the other replicas with followers mirror the leader — each announced tick advances their
/// copy to the same state, and their followers get the same standings for the same tick. When
/// the leader's process dies its session ends and the lock with it; a mirroring replica tries
/// the lock every `retryInterval`, takes it, and continues the race from where it stands (never
/// behind the checkpoint). A leader whose followers all left stops and lets go the same way.
public final class RaceCoordinator: Sendable {
    /// Where leaders announce ticks: "run tick race".
    public static let channel = "pitlane_races"
    /// How often a replica that does not lead a race it shows tries to take it over.
    public static let retryInterval: Duration = .milliseconds(250)

    let database: any SQLDatabase
    private let board: AnnouncementBoard
    private let listening: (any SQLListening)?

    /// The last tick heard for each race, written by the listener's thread.
    private final class AnnouncementBoard: Sendable {
        let heard = Mutex<[String: Announcement]>([:])

        func record(_ payloads: [String]) {
            heard.withLock { heard in
                for case let announced? in payloads.map(FeedAnnouncement.init(payload:)) {
                    guard let run = Int64(announced.source) else { continue }
                    heard[announced.key] = Announcement(run: run, tick: Int(announced.position))
                }
            }
        }
    }

    /// The last tick announced for a race.
    struct Announcement: Sendable, Equatable {
        var run: Int64
        var tick: Int
    }

    /// What a leader continues from.
    struct Run: Sendable {
        var run: Int64
        var tick: Int
        var seed: UInt64
        var tickSeconds: Double
    }

    /// Coordinates races on `database`; nil when there is nothing to coordinate (SQLite: one
    /// process).
    public init?(database: any SQLDatabase) throws {
        guard database.dialect == .postgres else { return nil }
        try database.withConnection { try Self.schema.apply(to: $0) }
        self.database = database
        let board = AnnouncementBoard()
        self.board = board
        listening = database.listen(to: Self.channel) { notification in
            if case .payloads(let payloads) = notification { board.record(payloads) }
        }
    }

    /// Stops listening.
    public func stop() { listening?.stop() }

    /// The last tick announced for `race`, by any replica.
    func lastAnnouncement(of race: String) -> Announcement? {
        board.heard.withLock { $0[race] }
    }

    /// The race's run as the database has it; nil before its first leader.
    func currentRun(of race: String) throws -> Run? {
        try database.withConnection { try Self.run(of: race, in: $0) }
    }

    /// Leads `race` if no other replica does: a lease on a session of its own, and the run to
    /// continue (a new one, from tick 0, when the last one finished or there was none). Nil
    /// when another replica leads it (or the database cannot be reached).
    func tryToLead(_ race: String, seed: UInt64, tickSeconds: Double) -> RaceLease? {
        guard let session = try? database.openSession() else { return nil }
        do {
            guard try session.first("SELECT pg_try_advisory_lock(hashtext(?))", .text("pitlane race " + race), as: { $0.int64(at: 0) }) == 1
            else { return nil }
            let run = try session.transaction { () throws -> Run in
                if let current = try Self.run(of: race, in: session), !(try Self.isFinished(race, in: session)) { return current }
                let next =
                    try session.first(
                        """
                        INSERT INTO race_runs (race, run, tick, seed, tick_seconds, finished) VALUES (?, 1, 0, ?, ?, 0)
                        ON CONFLICT (race) DO UPDATE SET run = race_runs.run + 1, tick = 0, seed = excluded.seed,
                            tick_seconds = excluded.tick_seconds, finished = 0
                        RETURNING run
                        """, .text(race), .integer(Int64(bitPattern: seed)), .real(tickSeconds), as: { $0.int64(at: 0) }) ?? 1
                return Run(run: next, tick: 0, seed: seed, tickSeconds: tickSeconds)
            }
            return RaceLease(race: race, run: run, session: session)
        } catch {
            return nil
        }
    }

    private static func run(of race: String, in connection: any SQLConnection) throws -> Run? {
        try connection.first("SELECT run, tick, seed, tick_seconds FROM race_runs WHERE race = ?", .text(race)) {
            Run(run: $0.int64(at: 0), tick: $0.int(at: 1), seed: UInt64(bitPattern: $0.int64(at: 2)), tickSeconds: $0.double(at: 3))
        }
    }

    private static func isFinished(_ race: String, in connection: any SQLConnection) throws -> Bool {
        try connection.first("SELECT finished FROM race_runs WHERE race = ?", .text(race), as: { $0.int64(at: 0) != 0 }) ?? true
    }

    static let schema = SchemaMigrations(
        component: "race_runs",
        steps: [
            (
                sqlite: """
                CREATE TABLE race_runs (race TEXT PRIMARY KEY, run INTEGER NOT NULL, tick INTEGER NOT NULL, seed INTEGER NOT NULL,
                                        tick_seconds REAL NOT NULL, finished INTEGER NOT NULL)
                """,
                postgres: """
                CREATE TABLE race_runs (race TEXT PRIMARY KEY, run BIGINT NOT NULL, tick BIGINT NOT NULL, seed BIGINT NOT NULL,
                                        tick_seconds DOUBLE PRECISION NOT NULL, finished INTEGER NOT NULL)
                """
            )
        ])
}

/// The right to run one race, held by a session's advisory lock until `release()` (or until
/// the process dies).
final class RaceLease {
    let race: String
    let run: RaceCoordinator.Run
    /// Used by the leading task only.
    private let session: any SQLConnection

    init(race: String, run: RaceCoordinator.Run, session: any SQLConnection) {
        self.race = race
        self.run = run
        self.session = session
    }

    /// Announces `tick` to the other replicas, checkpointing it first when `checkpoint`.
    func announce(tick: Int, checkpoint: Bool, finished: Bool) throws {
        if checkpoint || finished {
            try session.run(
                "UPDATE race_runs SET tick = ?, finished = ? WHERE race = ? AND run = ?",
                .int(tick), .int(finished ? 1 : 0), .text(race), .integer(run.run))
        }
        try session.notify(
            channel: RaceCoordinator.channel, payload: FeedAnnouncement(source: String(run.run), position: Int64(tick), key: race).payload)
    }

    /// Lets go of the race: closing the session releases the lock.
    func release() {
        _ = try? session.run("SELECT pg_advisory_unlock_all()")
    }
}
