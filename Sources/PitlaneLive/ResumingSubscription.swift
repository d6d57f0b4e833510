import Glibc
import PitlaneCore
import Synchronization

/// Where a ``ResumingSubscription`` stands.
public enum FeedConnectionState: Sendable, Equatable {
    /// Not running (before iteration, after it ended).
    case idle
    /// Bootstrapping, or opening the stream.
    case connecting
    /// The stream is open: updates arrive as they are published.
    case live
    /// Waiting before attempt `attempt` to reconnect.
    case retrying(attempt: Int)
    /// Given up: retrying cannot help (authentication, permission, no such key).
    case failed(String)
}

/// Exponential backoff with full jitter: attempt n waits a uniformly random time between zero
/// and `min(maximum, initial × multiplier^(n-1))`, so clients cut off together do not come back
/// together.
public struct ReconnectBackoff: Sendable {
    /// The first attempt's ceiling.
    public var initial: Duration
    /// How much the ceiling grows per attempt.
    public var multiplier: Double
    /// The largest ceiling.
    public var maximum: Duration

    /// Backoff from `initial`, growing by `multiplier`, up to `maximum`.
    public init(initial: Duration = .milliseconds(500), multiplier: Double = 2, maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
    }

    /// The ceiling for attempt `attempt` (from 1).
    public func ceiling(attempt: Int) -> Duration {
        let growth = pow(multiplier, Double(max(0, attempt - 1)))
        return min(maximum, initial * min(growth, 1e9))
    }

    /// A delay for attempt `attempt`, drawn from `generator`.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        ceiling(attempt: attempt) * Double.random(in: 0...1, using: &generator)
    }
}

/// What a ``ResumingSubscription`` yields.
public enum FeedEvent<Snapshot: Sendable, Update: Sendable>: Sendable {
    /// A snapshot replaced the state: the first bootstrap, and again after the server no
    /// longer had the updates after the client's position (`OUT_OF_RANGE`).
    case bootstrapped(Snapshot)
    /// The next update, in order, after the snapshot or the last update.
    case update(Update)
    /// The connection changed.
    case connection(FeedConnectionState)
}

/// Opens one stream of a ``ResumingSubscription``: the RPC, from a position, that tells when
/// it went live and hands over each update.
public struct FeedStreamOpening<Update: Sendable>: Sendable {
    /// The position to resume after: the snapshot's or the last update's token.
    public let after: String
    let onLive: @Sendable () async throws -> Void
    let onUpdate: @Sendable (Update) async throws -> Void

    /// Tells the subscription the stream is open (its response headers arrived).
    public func live() async throws { try await onLive() }

    /// Hands over the next update; waits while the subscription's reader has not taken the last.
    public func receive(_ update: Update) async throws { try await onUpdate(update) }

    /// Hands over a streaming call's response: live once the server accepted the call, then
    /// each message; throws the call's error.
    public func forward(_ response: StreamingClientResponse<Update>) async throws {
        if case .success = response.accepted { try await live() }
        for try await update in response.messages { try await receive(update) }
    }
}

/// The client side of a live feed: bootstraps with a snapshot, streams the updates after it,
/// and when the stream fails or ends, reconnects with ``ReconnectBackoff`` and resumes from the
/// last update it yielded — an `AsyncSequence` of ``FeedEvent``s that never applies an update
/// twice or skips one.
///
/// `OUT_OF_RANGE` and `INVALID_ARGUMENT` on a stream (the position is no longer retained, the
/// log was reset) make it bootstrap again; `UNAUTHENTICATED`, `PERMISSION_DENIED`, `NOT_FOUND`
/// and `UNIMPLEMENTED`, and any of them while bootstrapping, end it with ``FeedConnectionState/failed(_:)``
/// (its last event), since retrying cannot help; everything else is retried. Iteration ends
/// when the reading task is cancelled or stops iterating; the RPC in flight is cancelled.
///
/// Events wait for the reader: a slow reader slows the stream, and the server's policy for a
/// slow subscriber applies (the subscription then resumes).
///
/// ```swift
/// let updates = ResumingSubscription(timeSource: client.transport.timeSource) {
///     let snapshot = try await orders.getOrder(.with { $0.orderID = id })
///     return (snapshot, snapshot.latestUpdateID)
/// } follow: { stream in
///     try await orders.watchOrder(.with { $0.orderID = id; $0.sinceUpdateID = stream.after }) { try await stream.forward($0) }
/// } position: { $0.updateID }
/// for try await event in updates { … }
/// ```
public struct ResumingSubscription<Snapshot: Sendable, Update: Sendable>: AsyncSequence, Sendable {
    /// The events yielded.
    public typealias Element = FeedEvent<Snapshot, Update>

    /// Fetches the current state and the position it is at.
    public typealias Bootstrap = @Sendable () async throws -> (snapshot: Snapshot, position: String)
    /// Streams the updates after `opening.after` into `opening`, until the stream ends.
    public typealias Follow = @Sendable (_ opening: FeedStreamOpening<Update>) async throws -> Void

    let backoff: ReconnectBackoff
    let timeSource: TimeSource
    let bootstrap: Bootstrap
    let follow: Follow
    let position: @Sendable (Update) -> String

    /// A subscription that bootstraps with `bootstrap`, streams with `follow` and resumes from
    /// `position` of the last update, waiting `backoff` on `timeSource` between attempts.
    public init(
        backoff: ReconnectBackoff = ReconnectBackoff(), timeSource: TimeSource = .continuous, bootstrap: @escaping Bootstrap,
        follow: @escaping Follow, position: @escaping @Sendable (Update) -> String
    ) {
        self.backoff = backoff
        self.timeSource = timeSource
        self.bootstrap = bootstrap
        self.follow = follow
        self.position = position
    }

    /// Starts the subscription; it runs while the iterator is read.
    public func makeAsyncIterator() -> AsyncIterator {
        let handoff = Handoff<Element>()
        let task = Task { [self] in
            await run(into: handoff)
            handoff.finish()
        }
        return AsyncIterator(driver: Driver(handoff: handoff, task: task))
    }

    /// Reads a subscription's events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let driver: Driver

        /// The next event; nil once the subscription has ended (failed, or its task was cancelled).
        public mutating func next() async throws -> Element? {
            let task = driver.task
            return try await driver.handoff.next { task.cancel() }
        }
    }

    /// Stops the subscription's task when the iterator goes away.
    final class Driver: Sendable {
        let handoff: Handoff<Element>
        let task: Task<Void, Never>

        init(handoff: Handoff<Element>, task: Task<Void, Never>) {
            self.handoff = handoff
            self.task = task
        }

        deinit { task.cancel() }
    }

    private enum Recovery {
        case transient
        case rebootstrap
        case fatal(String)
    }

    /// Where the loop stands, shared with the stream's callbacks.
    private final class Progress: Sendable {
        struct State {
            /// The position to resume after; nil: bootstrap first.
            var resumeAfter: String?
            var connection = FeedConnectionState.idle
        }

        let state = Mutex(State())
        let handoff: Handoff<Element>

        init(handoff: Handoff<Element>) { self.handoff = handoff }

        var resumeAfter: String? {
            get { state.withLock { $0.resumeAfter } }
            set { state.withLock { $0.resumeAfter = newValue } }
        }

        var connection: FeedConnectionState { state.withLock { $0.connection } }

        /// Yields a change of the connection's state (nothing when it is the same).
        func set(_ connection: FeedConnectionState) async throws {
            let changed = state.withLock { state in
                defer { state.connection = connection }
                return state.connection != connection
            }
            if changed { try await handoff.send(.connection(connection)) }
        }
    }

    /// The loop: bootstrap when there is no position, stream, back off, again. Ends when the
    /// task is cancelled (the reader went away) or on a failure retrying cannot help.
    private func run(into handoff: Handoff<Element>) async {
        var generator = SystemRandomNumberGenerator()
        var attempt = 0
        let progress = Progress(handoff: handoff)
        do {
            while !Task.isCancelled {
                var bootstrapping = false
                do {
                    try await progress.set(.connecting)
                    if progress.resumeAfter == nil {
                        bootstrapping = true
                        let (snapshot, position) = try await bootstrap()
                        bootstrapping = false
                        progress.resumeAfter = position
                        try await handoff.send(.bootstrapped(snapshot))
                    }
                    try await follow(
                        FeedStreamOpening(
                            after: progress.resumeAfter ?? "",
                            onLive: { try await progress.set(.live) },
                            onUpdate: { [position] update in
                                try await handoff.send(.update(update))
                                progress.resumeAfter = position(update)
                            }))
                } catch {
                    if Task.isCancelled || error is CancellationError { break }
                    switch Self.classify(error, duringBootstrap: bootstrapping) {
                    case .fatal(let message):
                        try await progress.set(.failed(message))
                        return
                    case .rebootstrap:
                        progress.resumeAfter = nil
                    case .transient:
                        break
                    }
                }
                // A stream that went live starts the backoff over.
                if progress.connection == .live { attempt = 0 }
                attempt += 1
                try await progress.set(.retrying(attempt: attempt))
                try await timeSource.sleep(for: backoff.delay(attempt: attempt, using: &generator))
            }
            try await progress.set(.idle)
        } catch {
            // Cancelled, or the reader went away: nobody to tell.
        }
    }

    /// What to do after `error`: a position the server no longer accepts means bootstrapping
    /// again — unless bootstrapping itself failed that way, which retrying cannot fix.
    private static func classify(_ error: any Error, duringBootstrap: Bool) -> Recovery {
        guard let error = error as? RPCError else { return .transient }
        switch error.code {
        case .unauthenticated, .permissionDenied, .notFound, .unimplemented:
            return .fatal("\(error.code): \(error.message)")
        case .outOfRange, .invalidArgument:
            return duringBootstrap ? .fatal("\(error.code): \(error.message)") : .rebootstrap
        default:
            return .transient
        }
    }
}

/// One element at a time from a producing task to one reader: the producer waits until the
/// reader has taken each element, so a slow reader slows the producer instead of queueing.
final class Handoff<Element: Sendable>: Sendable {
    private struct State {
        var pending: (element: Element, producer: CheckedContinuation<Void, any Error>)?
        var reader: CheckedContinuation<Element?, any Error>?
        var finished = false
        var cancelled = false
    }

    private let state = Mutex(State())

    /// Hands `element` to the reader; returns once it has taken it.
    ///
    /// - Throws: `CancellationError` when the reader went away or the producing task was cancelled.
    func send(_ element: Element) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (producer: CheckedContinuation<Void, any Error>) in
                let reader: CheckedContinuation<Element?, any Error>?? = state.withLock { state in
                    if state.cancelled || state.finished { return .some(nil) }
                    if let reader = state.reader {
                        state.reader = nil
                        return .some(reader)
                    }
                    state.pending = (element, producer)
                    return .none
                }
                switch reader {
                case .none: break
                case .some(nil): producer.resume(throwing: CancellationError())
                case .some(let reader?):
                    reader.resume(returning: element)
                    producer.resume()
                }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.pending = nil }
                return state.pending?.producer
            }?.resume(throwing: CancellationError())
        }
    }

    /// Ends the reading: the reader's next read, and every later one, is nil.
    func finish() {
        state.withLock { state in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }?.resume(returning: nil)
    }

    /// The next element, waiting for one; nil once finished. When the reading task is
    /// cancelled, `onCancel` runs (it stops the producer) and this throws `CancellationError`.
    func next(onCancel: @escaping @Sendable () -> Void) async throws -> Element? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (reader: CheckedContinuation<Element?, any Error>) in
                let result: Result<Element?, any Error>? = state.withLock { state in
                    if let (element, producer) = state.pending {
                        state.pending = nil
                        producer.resume()
                        return .success(element)
                    }
                    if state.cancelled { return .failure(CancellationError()) }
                    if state.finished { return .success(nil) }
                    state.reader = reader
                    return nil
                }
                if let result { reader.resume(with: result) }
            }
        } onCancel: {
            let (reader, producer) = state.withLock { state in
                state.cancelled = true
                defer {
                    state.reader = nil
                    state.pending = nil
                }
                return (state.reader, state.pending?.producer)
            }
            reader?.resume(throwing: CancellationError())
            producer?.resume(throwing: CancellationError())
            onCancel()
        }
    }
}
