import Glibc
import PitlaneCore
import PitlaneLive
import PitlaneProtobuf
import Synchronization

/// Runs the live races: one simulation per race, shared by everyone following it, started by
/// the first follower and stopped after the last one leaves. Locations go out every tick
/// (10 Hz by default), standings every `standingsEvery` ticks (1 Hz), and when the race is
/// over every follower's stream ends.
public final class RaceTracker: Sendable {
    public struct Settings: Sendable {
        /// Wall-clock time between ticks.
        public var tickInterval: Duration = .milliseconds(100)
        /// Standings go out every this many ticks.
        public var standingsEvery = 10
        /// How much faster than real time races run (tests and demos use more than 1).
        public var speed = 1.0
        /// Seeds every simulation: the same seed replays the same races.
        public var seed: UInt64 = 0
        /// Standings updates a slow follower may fall behind before it is disconnected.
        public var standingsBacklog = 64
        /// The time ticks are paced by. Default real time; tests step a ``ManualClock``.
        public var timeSource = TimeSource.continuous
        /// Replicas on one PostgreSQL database: one of them runs each race, the others mirror it.
        /// Nil: this process runs its races by itself.
        public var coordinator: RaceCoordinator?

        public init() {}
    }

    public let settings: Settings
    private let live = Mutex<[String: LiveRace]>([:])

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Starts following `race`, joining its live simulation or starting it.
    public func follow(_ race: ScheduledRace, eventTypes: Set<RaceEventType>) -> RaceFollower {
        live.withLock { races in
            if let running = races[race.name], let follower = running.add(eventTypes: eventTypes) { return follower }
            let started = LiveRace(race: race, settings: settings)
            let follower = started.add(eventTypes: eventTypes)!
            races[race.name] = started
            started.start { [weak self] in self?.remove(started) }
            return follower
        }
    }

    /// Replaces what `follower` receives; a type it did not receive before starts at once with
    /// the race's latest event of that type (the leaderboard appears without waiting a second).
    public func change(_ follower: RaceFollower, eventTypes: Set<RaceEventType>) {
        let added = eventTypes.subtracting(follower.eventTypes)
        follower.eventTypes = eventTypes
        guard !added.isEmpty else { return }
        follower.race?.offerLatest(of: added, to: follower)
    }

    /// Stops following; the race stops when nobody follows it any more.
    public func leave(_ follower: RaceFollower) {
        guard let race = follower.race else { return }
        let stopped: LiveRace? = live.withLock { races in
            race.remove(follower)
            guard race.isAbandoned, races[race.race.name] === race else { return nil }
            races[race.race.name] = nil
            return race
        }
        stopped?.stop()
    }

    /// Races running now, and their followers, for metrics.
    public var counts: (races: Int, followers: Int) {
        let races = live.withLock { Array($0.values) }
        return (races.count, races.reduce(0) { $0 + $1.followerCount })
    }

    /// Ends every live race: followers' streams fail with `.unavailable`, so clients know to
    /// follow again elsewhere. For a server shutting down.
    public func shutdown() {
        let running = live.withLock { races in
            defer { races.removeAll() }
            return Array(races.values)
        }
        for race in running {
            race.stop(failing: RPCError(code: .unavailable, message: "the server is shutting down; follow the race again"))
        }
    }

    /// The event types each follower of `raceName` receives now; empty when it is not live.
    package func eventTypesOfFollowers(of raceName: String) -> [Set<RaceEventType>] {
        let race = live.withLock { $0[raceName] }
        return race?.followerEventTypes ?? []
    }

    private func remove(_ race: LiveRace) {
        live.withLock { races in
            if races[race.race.name] === race { races[race.race.name] = nil }
        }
    }
}

/// One running simulation and its followers, an ephemeral feed: what each tick publishes goes
/// to every follower's buffer, and nothing is kept but the latest event of each type.
final class LiveRace: Sendable {
    private struct State {
        /// The latest of each, for followers who join mid-race.
        var latest: [RaceEvent] = []
        var tick = 0
        var isOver = false
        var task: Task<Void, Never>?
    }

    let race: ScheduledRace
    private let settings: RaceTracker.Settings
    private let state = Mutex(State())
    /// Its followers, under the race's name.
    private let followers: FeedSubscribers<RaceEventBuffer>

    init(race: ScheduledRace, settings: RaceTracker.Settings) {
        self.race = race
        self.settings = settings
        followers = FeedSubscribers { [backlog = settings.standingsBacklog] in RaceEventBuffer(eventTypes: [], standingsBacklog: backlog) }
    }

    var followerCount: Int { followers.count(of: race.name) }

    /// A new follower of `eventTypes`, unless the race is over; it gets the latest events at once.
    func add(eventTypes: Set<RaceEventType>) -> RaceFollower? {
        state.withLock { state in
            guard !state.isOver else { return nil }
            let buffer = RaceEventBuffer(eventTypes: eventTypes, standingsBacklog: settings.standingsBacklog)
            let follower = RaceFollower(subscription: followers.subscribe(to: race.name, buffer: buffer), race: self)
            for event in state.latest { follower.offer(event, tick: state.tick) }
            return follower
        }
    }

    /// Removes a follower.
    func remove(_ follower: RaceFollower) {
        followers.unsubscribe(follower.subscription)
    }

    var isAbandoned: Bool { followers.count(of: race.name) == 0 }

    var followerEventTypes: [Set<RaceEventType>] {
        followers.subscriptions(of: race.name).map { $0.mailbox.withBuffer { $0.eventTypes } }
    }

    /// Hands `follower` the latest event of each of `types`.
    func offerLatest(of types: Set<RaceEventType>, to follower: RaceFollower) {
        state.withLock { state in
            for event in state.latest where types.contains(event.type) { follower.offer(event, tick: state.tick) }
        }
    }

    func start(onFinish: @escaping @Sendable () -> Void) {
        let task = Task.detached { [self] in
            await run()
            onFinish()
        }
        state.withLock { $0.task = task }
    }

    /// Ends the simulation; remaining followers' streams fail with `error`.
    func stop(failing error: RPCError? = nil) {
        let task = state.withLock { state in
            state.isOver = true
            return state.task
        }
        task?.cancel()
        followers.end(race.name, failing: error)
    }

    private func run() async {
        let tickSeconds = settings.tickInterval / .seconds(1) * settings.speed
        if let coordinator = settings.coordinator {
            await runCoordinated(by: coordinator, tickSeconds: tickSeconds)
        } else {
            var simulation = RaceSimulation(race: race, seed: settings.seed, tickSeconds: tickSeconds)
            _ = await drive(&simulation)
        }
        state.withLock { $0.isOver = true }
        followers.end(race.name)
    }

    /// Paces `simulation` to its finish, one tick per tick interval of the settings' clock,
    /// publishing each; `announce` runs before each publish (a leader tells the other replicas)
    /// and ends the drive when it throws. True when the race finished.
    private func drive(
        _ simulation: inout RaceSimulation,
        announce: (RaceSimulation, _ standings: Bool) throws -> Void = { _, _ in }
    ) async -> Bool {
        let clock = settings.timeSource
        var deadline = clock.now
        // Tick 0 opens with standings; a race taken over mid-way sends them on its usual ticks.
        publish(simulation, standings: isStandingsTick(simulation))
        while !simulation.isFinished {
            deadline += settings.tickInterval
            do { try await clock.sleep(until: deadline) } catch { return false }
            simulation.advance()
            let standings = isStandingsTick(simulation)
            do { try announce(simulation, standings) } catch { return false }
            publish(simulation, standings: standings)
        }
        return true
    }

    private func isStandingsTick(_ simulation: RaceSimulation) -> Bool {
        simulation.tick % settings.standingsEvery == 0 || simulation.isFinished
    }

    /// One simulation in the whole deployment (`RaceCoordinator`): lead the race when no other
    /// replica does, mirror the leader's announced ticks otherwise, and take over when it goes
    /// quiet.
    private func runCoordinated(by coordinator: RaceCoordinator, tickSeconds: Double) async {
        var mirrored: (run: Int64, simulation: RaceSimulation)?
        while !Task.isCancelled {
            if let lease = coordinator.tryToLead(race.name, seed: settings.seed, tickSeconds: tickSeconds) {
                var simulation =
                    mirrored.flatMap { $0.run == lease.run.run ? $0.simulation : nil }
                    ?? RaceSimulation(race: race, seed: lease.run.seed, tickSeconds: lease.run.tickSeconds)
                while simulation.tick < lease.run.tick { simulation.advance() }
                let finished = await drive(&simulation) { simulation, standings in
                    try lease.announce(tick: simulation.tick, checkpoint: standings, finished: simulation.isFinished)
                }
                lease.release()
                if finished || Task.isCancelled { return }
                // The database went away mid-race: lead or mirror again once it is back.
                mirrored = (lease.run.run, simulation)
                try? await Task.sleep(for: RaceCoordinator.retryInterval)
                continue
            }
            guard let run = try? coordinator.currentRun(of: race.name) else {
                try? await Task.sleep(for: RaceCoordinator.retryInterval)
                continue
            }
            var simulation =
                mirrored.flatMap { $0.run == run.run ? $0.simulation : nil }
                ?? RaceSimulation(race: race, seed: run.seed, tickSeconds: run.tickSeconds)
            if simulation.tick < run.tick || mirrored?.run != run.run {
                while simulation.tick < run.tick { simulation.advance() }
                publish(simulation, standings: true)
            }
            if await mirror(&simulation, run: run.run, coordinator: coordinator) { return }
            mirrored = (run.run, simulation)
        }
    }

    /// Follows the leader's announcements of `run` until the race is over (true) or nothing is
    /// heard for `RaceCoordinator.retryInterval` (false: time to try to lead).
    private func mirror(_ simulation: inout RaceSimulation, run: Int64, coordinator: RaceCoordinator) async -> Bool {
        let clock = ContinuousClock()
        var heardAt = clock.now
        while !Task.isCancelled, !simulation.isFinished {
            try? await Task.sleep(for: .milliseconds(10))
            guard let heard = coordinator.lastAnnouncement(of: race.name), heard.run == run, heard.tick > simulation.tick else {
                if clock.now - heardAt > RaceCoordinator.retryInterval { return false }
                continue
            }
            heardAt = clock.now
            while simulation.tick < heard.tick {
                simulation.advance()
                publish(simulation, standings: isStandingsTick(simulation))
            }
        }
        return simulation.isFinished
    }

    /// Sends this tick's events to every follower.
    private func publish(_ simulation: RaceSimulation, standings: Bool) {
        let now = Self.now()
        var events = [RaceEvent.locations(.with { $0.locations = simulation.locations(recordedAt: now) })]
        if standings {
            events.append(.standings(.with { $0.standings = simulation.standings() }))
        }
        state.withLock { state in
            state.tick = simulation.tick
            for event in events {
                if let index = state.latest.firstIndex(where: { $0.type == event.type }) {
                    state.latest[index] = event
                } else {
                    state.latest.append(event)
                }
            }
        }
        for subscription in followers.subscriptions(of: race.name) {
            for event in events { subscription.mailbox.offer(TickedEvent(event: event, tick: simulation.tick)) }
        }
    }

    /// The wall-clock time, for `recorded_at`.
    private static func now() -> Google_Protobuf_Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Google_Protobuf_Timestamp(seconds: Int64(time.tv_sec), nanos: Int32(time.tv_nsec))
    }
}
