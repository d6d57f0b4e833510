import PitlaneCore
import Synchronization

/// One client's view of a live race: the events it asked for, in order, at the pace it reads.
///
/// A follower that reads slower than events arrive gets conflated locations — only the
/// latest positions wait for it — and every standings update, in order. If it falls more than
/// `standingsBacklog` standings behind it is ended with `.resourceExhausted`, so a stalled
/// client costs a bounded amount of memory.
public final class RaceFollower: AsyncSequence, Sendable {
    public typealias Element = FollowRaceResponse

    /// An event stamped with the tick that produced it, for ordering.
    struct Pending {
        var tick: Int
        var message: FollowRaceResponse
    }

    private enum End {
        case finished
        case failed(any Error)
    }

    private struct State {
        var eventTypes: Set<RaceEventType>
        var locations: Pending?
        var standings = Deque<Pending>()
        var waiter: CheckedContinuation<FollowRaceResponse?, any Error>?
        var end: End?
        /// The newest tick offered of each type: an event is never offered twice, or out of order.
        var offeredTicks: [RaceEventType: Int] = [:]

        /// The earliest pending event; locations go first within a tick.
        mutating func takeNext() -> FollowRaceResponse? {
            if let locations, standings.first.map({ locations.tick <= $0.tick }) ?? true {
                self.locations = nil
                return locations.message
            }
            return standings.popFirst()?.message
        }
    }

    private let state: Mutex<State>
    private let standingsBacklog: Int

    init(eventTypes: Set<RaceEventType>, standingsBacklog: Int) {
        state = Mutex(State(eventTypes: eventTypes))
        self.standingsBacklog = standingsBacklog
    }

    /// The event types this follower receives from now on; pending events of types no longer
    /// wanted are dropped.
    public var eventTypes: Set<RaceEventType> {
        get { state.withLock { $0.eventTypes } }
        set {
            state.withLock { state in
                state.eventTypes = newValue
                if !newValue.contains(.kartLocations) { state.locations = nil }
                if !newValue.contains(.standings) { state.standings.removeAll() }
            }
        }
    }

    /// Hands the follower one event from the race.
    func offer(_ event: RaceEvent, tick: Int) {
        let resume: (CheckedContinuation<FollowRaceResponse?, any Error>, Result<FollowRaceResponse?, any Error>)? = state.withLock { state in
            guard state.end == nil, state.eventTypes.contains(event.type),
                  tick > state.offeredTicks[event.type, default: -1] else { return nil }
            state.offeredTicks[event.type] = tick
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, .success(event.response))
            }
            switch event {
            case .locations:
                state.locations = Pending(tick: tick, message: event.response)
            case .standings:
                state.standings.append(Pending(tick: tick, message: event.response))
                if state.standings.count > standingsBacklog {
                    state.locations = nil
                    state.standings.removeAll()
                    state.end = .failed(RPCError(
                        code: .resourceExhausted,
                        message: "follower fell more than \(standingsBacklog) standings updates behind the race"))
                }
            }
            return nil
        }
        if let (waiter, result) = resume { waiter.resume(with: result) }
    }

    /// Ends the stream once pending events are read: the race is over.
    func finish() { end(.finished) }

    /// Ends the stream with `error` once pending events are read.
    func fail(_ error: any Error) { end(.failed(error)) }

    private func end(_ end: End) {
        let waiter = state.withLock { state -> CheckedContinuation<FollowRaceResponse?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = end
            defer { state.waiter = nil }
            return state.waiter
        }
        switch end {
        case .finished: waiter?.resume(returning: nil)
        case .failed(let error): waiter?.resume(throwing: error)
        }
    }

    /// The next event, waiting for one; nil once the race is over.
    public func next() async throws -> FollowRaceResponse? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let result: Result<FollowRaceResponse?, any Error>? = state.withLock { state in
                    if let next = state.takeNext() { return .success(next) }
                    switch state.end {
                    case .finished: return .success(nil)
                    case .failed(let error): return .failure(error)
                    case nil:
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state.waiter = continuation
                        return nil
                    }
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            state.withLock { state in defer { state.waiter = nil }; return state.waiter }?.resume(throwing: CancellationError())
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let follower: RaceFollower
        public mutating func next() async throws -> FollowRaceResponse? { try await follower.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(follower: self) }
}

/// What a live race publishes each tick.
enum RaceEvent: Sendable {
    case locations(FollowRaceResponse)
    case standings(FollowRaceResponse)

    var type: RaceEventType {
        switch self {
        case .locations: .kartLocations
        case .standings: .standings
        }
    }

    var response: FollowRaceResponse {
        switch self {
        case .locations(let response), .standings(let response): response
        }
    }
}
