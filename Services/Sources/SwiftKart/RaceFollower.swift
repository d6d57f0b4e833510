import PitlaneCore
import PitlaneLive

/// One client's view of a live race: the events it asked for, in order, at the pace it reads
/// — a subscription of the race's ephemeral feed (`FeedSubscribers`), buffered by
/// `RaceEventBuffer`.
///
/// A follower that reads slower than events arrive gets conflated locations — only the
/// latest positions wait for it — and every standings update, in order. If it falls more than
/// `standingsBacklog` standings behind it is ended with `.resourceExhausted`, so a stalled
/// client costs a bounded amount of memory.
public struct RaceFollower: AsyncSequence, Sendable {
    public typealias Element = FollowRaceResponse

    let subscription: FeedSubscription<RaceEventBuffer>
    /// The race followed; nil for a follower made on its own.
    let race: LiveRace?
    private var mailbox: Mailbox<RaceEventBuffer> { subscription.mailbox }

    init(subscription: FeedSubscription<RaceEventBuffer>, race: LiveRace) {
        self.subscription = subscription
        self.race = race
    }

    /// A follower of no race, offered events by hand.
    init(eventTypes: Set<RaceEventType>, standingsBacklog: Int) {
        let alone = FeedSubscribers { RaceEventBuffer(eventTypes: eventTypes, standingsBacklog: standingsBacklog) }
        subscription = alone.subscribe(to: "")
        race = nil
    }

    /// The event types this follower receives from now on; pending events of types no longer
    /// wanted are dropped.
    public var eventTypes: Set<RaceEventType> {
        get { mailbox.withBuffer { $0.eventTypes } }
        nonmutating set { mailbox.withBuffer { $0.setEventTypes(newValue) } }
    }

    /// Hands the follower one event from the race.
    func offer(_ event: RaceEvent, tick: Int) {
        mailbox.offer(TickedEvent(event: event, tick: tick))
    }

    /// Ends the stream once pending events are read: the race is over.
    func finish() { mailbox.end(.finished) }

    /// Ends the stream with `error` once pending events are read.
    func fail(_ error: any Error) { mailbox.end(.failed(error)) }

    /// The next event, waiting for one; nil once the race is over.
    public func next() async throws -> FollowRaceResponse? { try await mailbox.next()?.message }

    /// Writes the follower's events to `writer` until the race is over, then leaves it
    /// (`tracker.leave`) and runs `ended`. The race queues each event on the stream as it
    /// publishes; once the stream is behind, events wait here under the follower's policy
    /// and go as the stream drains. On a server's stream no task waits meanwhile: this
    /// returns at once, and the RPC ends with the race (or the follower's error), after its
    /// handler has returned.
    public func forward(
        to writer: RPCWriter<FollowRaceResponse>, leaving tracker: RaceTracker, then ended: (@Sendable () -> Void)? = nil
    ) async throws {
        try await writer.deliver(from: mailbox) { [self] _ in
            tracker.leave(self)
            ended?()
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let follower: RaceFollower
        public mutating func next() async throws -> FollowRaceResponse? { try await follower.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(follower: self) }
}

/// An event stamped with the tick that produced it, for ordering.
struct TickedEvent: Sendable {
    var event: RaceEvent
    var tick: Int
}

/// What waits for a follower: the latest locations only, every standings update up to the
/// backlog, each event type only while it is wanted, and no tick twice.
///
/// Every tick offers an event to every follower, so the per-event checks are plain fields
/// (the two deliverable types each have their own), not set and dictionary lookups.
struct RaceEventBuffer: MailboxBuffer {
    let standingsBacklog: Int
    private var wantsLocations: Bool
    private var wantsStandings: Bool
    private var locations: TickedEvent?
    /// At most `standingsBacklog` (a handful): taking the first from an array costs nothing to speak of.
    private var standings: [TickedEvent] = []
    /// The newest tick offered of each type: an event is never offered twice, or out of order.
    private var offeredLocationsTick = -1
    private var offeredStandingsTick = -1

    /// The deliverable types wanted, as a set: kept as the two flags, so that a follower holds
    /// no set storage of its own.
    var eventTypes: Set<RaceEventType> {
        var types: Set<RaceEventType> = []
        if wantsLocations { types.insert(.kartLocations) }
        if wantsStandings { types.insert(.standings) }
        return types
    }

    init(eventTypes: Set<RaceEventType>, standingsBacklog: Int) {
        self.standingsBacklog = standingsBacklog
        wantsLocations = eventTypes.contains(.kartLocations)
        wantsStandings = eventTypes.contains(.standings)
    }

    mutating func setEventTypes(_ types: Set<RaceEventType>) {
        wantsLocations = types.contains(.kartLocations)
        wantsStandings = types.contains(.standings)
        if !wantsLocations { locations = nil }
        if !wantsStandings { standings.removeAll() }
    }

    mutating func append(_ input: TickedEvent) -> (any Error)? {
        switch input.event.type {
        case .kartLocations:
            guard wantsLocations, input.tick > offeredLocationsTick else { return nil }
            offeredLocationsTick = input.tick
            locations = input
            return nil
        case .standings:
            guard wantsStandings, input.tick > offeredStandingsTick else { return nil }
            offeredStandingsTick = input.tick
        default:
            return nil
        }
        standings.append(input)
        if standings.count > standingsBacklog {
            locations = nil
            standings.removeAll()
            return RPCError(
                code: .resourceExhausted,
                message: "follower fell more than \(standingsBacklog) standings updates behind the race")
        }
        return nil
    }

    /// The earliest pending event; locations go first within a tick.
    mutating func removeNext() -> SerializedMessage<FollowRaceResponse>? {
        if let pending = locations, standings.first.map({ pending.tick <= $0.tick }) ?? true {
            locations = nil
            return pending.event.response
        }
        return standings.isEmpty ? nil : standings.removeFirst().event.response
    }
}

/// What a live race publishes each tick, serialized once: every follower's RPC sends the
/// same bytes, with no serializing per follower.
struct RaceEvent: Sendable {
    let type: RaceEventType
    let response: SerializedMessage<FollowRaceResponse>

    static func locations(_ response: FollowRaceResponse) -> RaceEvent {
        RaceEvent(type: .kartLocations, response: SerializedMessage(response))
    }

    static func standings(_ response: FollowRaceResponse) -> RaceEvent {
        RaceEvent(type: .standings, response: SerializedMessage(response))
    }
}
