import PitlaneCore
import Synchronization

/// One FollowRace RPC's requests, as they are delivered: the first names the race and is
/// handed to the RPC's task, which looks the race up; what arrives meanwhile (new event types,
/// the half-close, a failure) waits here and reaches the follower once it exists; after that,
/// each request goes straight to it.
///
/// The task waits for the first request here rather than reading it from the request stream:
/// a read's frames are the deepest of the RPC, and a task keeps the slabs of its deepest stack
/// for as long as it runs, so every follower would hold them.
final class RaceSelection: Sendable {
    private enum State {
        /// No request yet; the task may be waiting for it.
        case awaitingFirst(UnsafeContinuation<FollowRaceRequest?, any Error>?)
        /// Requests arrived before the task asked for the first.
        case early(first: FollowRaceRequest, later: Pending)
        /// The task has the first request and is looking the race up.
        case choosing(Pending)
        case following(RaceFollower)
        /// The requests ended before a follower existed (or the task stopped waiting).
        case ended((any Error)?)
    }

    /// What arrived after the first request, before the follower existed.
    private struct Pending {
        var eventTypes: [RaceEventType]?
        var end: Result<Void, any Error>?

        /// Later requests replace the event types; the first end is kept and nothing after it.
        mutating func record(_ delivery: Result<FollowRaceRequest?, any Error>) {
            guard end == nil else { return }
            switch delivery {
            case .success(let request?): eventTypes = request.eventTypes
            case .success(nil): end = .success(())
            case .failure(let error): end = .failure(error)
            }
        }
    }

    /// What to do, outside the lock, with a delivered request.
    private enum OnDelivery {
        case none
        case resume(UnsafeContinuation<FollowRaceRequest?, any Error>, Result<FollowRaceRequest?, any Error>)
        case change(RaceFollower, [RaceEventType])
        case end(RaceFollower, (any Error)?)
    }

    private let state = Mutex(State.awaitingFirst(nil))
    private let tracker: RaceTracker

    init(tracker: RaceTracker) {
        self.tracker = tracker
    }

    /// Takes one delivered request, the half-close (`.success(nil)`) or the failure.
    func receive(_ delivery: Result<FollowRaceRequest?, any Error>) {
        let action: OnDelivery = state.withLock { state in
            switch (state, delivery) {
            case (.awaitingFirst(let waiter), .success(let request)):
                if let request {
                    state = waiter == nil ? .early(first: request, later: Pending()) : .choosing(Pending())
                } else {
                    state = .ended(nil)
                }
                return waiter.map { .resume($0, .success(request)) } ?? .none
            case (.awaitingFirst(let waiter), .failure(let error)):
                state = .ended(error)
                return waiter.map { .resume($0, .failure(error)) } ?? .none
            case (.early(let first, var later), _):
                later.record(delivery)
                state = .early(first: first, later: later)
                return .none
            case (.choosing(var pending), _):
                pending.record(delivery)
                state = .choosing(pending)
                return .none
            case (.following(let follower), .success(let request?)):
                return .change(follower, request.eventTypes)
            case (.following(let follower), .success(nil)):
                return .end(follower, nil)
            case (.following(let follower), .failure(let error)):
                return .end(follower, error)
            case (.ended, _):
                return .none
            }
        }
        perform(action)
    }

    /// The first request; nil if the client half-closed before sending one.
    /// - Throws: the request stream's failure, or `CancellationError` when the RPC is cancelled.
    func firstRequest() async throws -> FollowRaceRequest? {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                let now: Result<FollowRaceRequest?, any Error>? = state.withLock { state in
                    switch state {
                    case .awaitingFirst:
                        if Task.isCancelled {
                            state = .ended(CancellationError())
                            return .failure(CancellationError())
                        }
                        state = .awaitingFirst(continuation)
                        return nil
                    case .early(let first, let later):
                        state = .choosing(later)
                        return .success(first)
                    case .ended(let error):
                        return error.map { .failure($0) } ?? .success(nil)
                    case .choosing, .following:
                        preconditionFailure("RaceSelection: the first request was taken twice")
                    }
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let waiter: UnsafeContinuation<FollowRaceRequest?, any Error>? = state.withLock { state in
                guard case .awaitingFirst(let waiter?) = state else { return nil }
                state = .ended(CancellationError())
                return waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// The follower exists: what waited for it reaches it now, and later requests go to it.
    func start(_ follower: RaceFollower) {
        let pending: Pending? = state.withLock { state in
            guard case .choosing(let pending) = state else { return nil }
            state = .following(follower)
            return pending
        }
        if let types = pending?.eventTypes { perform(.change(follower, types)) }
        switch pending?.end {
        case .success?: perform(.end(follower, nil))
        case .failure(let error)?: perform(.end(follower, error))
        case nil: break
        }
    }

    private func perform(_ action: OnDelivery) {
        switch action {
        case .none: break
        case .resume(let waiter, let result): waiter.resume(with: result)
        case .change(let follower, let types): tracker.change(follower, eventTypes: Set(types))
        case .end(let follower, nil): follower.finish()
        case .end(let follower, let error?): follower.fail(error)
        }
    }
}
