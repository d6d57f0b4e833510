import PitlaneCore
import Synchronization
import TestSupport
import Testing

@testable import PitlaneLive

/// The client side of a feed, without sockets: a scripted server (bootstrap and stream
/// closures) and a manual clock for the backoff. What it yields, where each stream resumes,
/// which failures it retries, re-bootstraps after or gives up on, and that a reader that stops
/// stops the stream.
@Suite("Resuming subscription", .timeLimit(.minutes(1)))
struct ResumingSubscriptionTests {
    typealias Subscription = ResumingSubscription<String, Int>

    /// A server whose log is 1, 2, 3…; each stream is scripted: how many updates it sends
    /// from its position, then how it ends.
    final class ScriptedServer: Sendable {
        struct Script: Sendable {
            var updates: Int
            var end: RPCError?
        }

        let state = Mutex<(scripts: [Script], bootstraps: Int, openedAfter: [String], snapshotAt: Int)>(([], 0, [], 0))

        init(snapshotAt: Int, _ scripts: [Script]) {
            state.withLock {
                $0.scripts = scripts
                $0.snapshotAt = snapshotAt
            }
        }

        var bootstraps: Int { state.withLock { $0.bootstraps } }
        var openedAfter: [String] { state.withLock { $0.openedAfter } }

        func subscription(clock: ManualClock, bootstrapError: RPCError? = nil) -> Subscription {
            Subscription(
                backoff: ReconnectBackoff(initial: .seconds(1), maximum: .seconds(1)), timeSource: .manual(clock),
                bootstrap: {
                    if let bootstrapError { throw bootstrapError }
                    let at = self.state.withLock { state in
                        state.bootstraps += 1
                        return state.snapshotAt
                    }
                    return ("snapshot at \(at)", String(at))
                },
                follow: { stream in
                    let script: Script? = self.state.withLock { state in
                        state.openedAfter.append(stream.after)
                        return state.scripts.isEmpty ? nil : state.scripts.removeFirst()
                    }
                    guard let script else {
                        // Out of script: a stream that stays open until cancelled.
                        try await stream.live()
                        try await Task.sleep(for: .seconds(3600))
                        return
                    }
                    try await stream.live()
                    let after = Int(stream.after)!
                    for update in (after + 1)..<(after + 1 + script.updates) { try await stream.receive(update) }
                    if let end = script.end { throw end }
                },
                position: { String($0) })
        }
    }

    /// Reads `subscription` until `stop` says so, stepping the clock over each backoff.
    func read(
        _ subscription: Subscription, clock: ManualClock, until stop: (Subscription.Element) -> Bool
    ) async throws
        -> [Subscription.Element]
    {
        var events: [Subscription.Element] = []
        for try await event in subscription {
            events.append(event)
            if stop(event) { break }
            if case .connection(.retrying) = event {
                await clock.waitForArmedTimers(atLeast: 1)
                clock.advance(by: .seconds(1))
            }
        }
        return events
    }

    static func describe(_ event: Subscription.Element) -> String {
        switch event {
        case .bootstrapped(let snapshot): snapshot
        case .update(let update): String(update)
        case .connection(let state): "\(state)"
        }
    }

    @Test("a transient failure is retried after the backoff and the stream resumes after the last update yielded")
    func resumesAfterTransientFailure() async throws {
        let clock = ManualClock()
        let server = ScriptedServer(
            snapshotAt: 10, [.init(updates: 3, end: RPCError(code: .unavailable, message: "gone")), .init(updates: 2)])
        let events = try await read(server.subscription(clock: clock), clock: clock) { event in
            if case .update(15) = event { true } else { false }
        }
        #expect(
            events.map(Self.describe) == [
                "connecting", "snapshot at 10", "live", "11", "12", "13", "retrying(attempt: 1)", "connecting", "live", "14", "15",
            ])
        #expect(server.openedAfter == ["10", "13"])
        #expect(server.bootstraps == 1)
    }

    @Test("OUT_OF_RANGE on a stream bootstraps again; the new stream starts from the new snapshot")
    func rebootstrapsOutOfRange() async throws {
        let clock = ManualClock()
        let server = ScriptedServer(snapshotAt: 5, [.init(updates: 1, end: RPCError(code: .outOfRange, message: "not retained"))])
        let events = try await read(server.subscription(clock: clock), clock: clock) { event in
            if case .connection(.live) = event, server.bootstraps == 2 { true } else { false }
        }
        #expect(events.map(Self.describe).filter { $0.hasPrefix("snapshot") } == ["snapshot at 5", "snapshot at 5"])
        #expect(server.openedAfter == ["5", "5"])
    }

    @Test("PERMISSION_DENIED ends it in failed, its last event; a bootstrap that is refused too")
    func givesUp() async throws {
        let clock = ManualClock()
        let denied = ScriptedServer(snapshotAt: 1, [.init(updates: 0, end: RPCError(code: .permissionDenied, message: "not yours"))])
        let events = try await read(denied.subscription(clock: clock), clock: clock) { _ in false }
        #expect(events.last.map(Self.describe) == "failed(\"PERMISSION_DENIED: not yours\")")
        let refused = ScriptedServer(snapshotAt: 1, [])
        let bootstrapEvents = try await read(
            refused.subscription(clock: clock, bootstrapError: RPCError(code: .invalidArgument, message: "bad id")), clock: clock
        ) { _ in false }
        #expect(bootstrapEvents.map(Self.describe) == ["connecting", "failed(\"INVALID_ARGUMENT: bad id\")"])
    }

    @Test("a reader that stops iterating stops the stream it was reading")
    func stopsWithTheReader() async throws {
        let clock = ManualClock()
        let server = ScriptedServer(snapshotAt: 0, [])
        let subscription = server.subscription(clock: clock)
        let cancelled = Mutex(false)
        let probe = Subscription(
            timeSource: .manual(clock), bootstrap: { ("s", "0") },
            follow: { stream in
                try await stream.live()
                do {
                    try await Task.sleep(for: .seconds(3600))
                } catch {
                    cancelled.withLock { $0 = true }
                    throw error
                }
            }, position: { String($0) })
        _ = try await read(probe, clock: clock) { event in
            if case .connection(.live) = event { true } else { false }
        }
        try await eventually { cancelled.withLock { $0 } }
        // And a reading task that is cancelled ends its iteration.
        let reading = Task { try await read(subscription, clock: clock) { _ in false } }
        try await eventually { server.openedAfter.count == 1 }
        reading.cancel()
        await #expect(throws: CancellationError.self) { _ = try await reading.value }
    }
}
