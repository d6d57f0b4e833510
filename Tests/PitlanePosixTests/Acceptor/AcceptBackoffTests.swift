import Testing

@testable import PitlanePosix

/// The acceptor's back-off on its own: failed accepts pause it for a doubling while, an
/// accept that works ends the run, and a freed descriptor makes a paused acceptor try again
/// at once rather than wait out its pause.
@Suite("Accept back-off", .timeLimit(.minutes(1)))
struct AcceptBackoffTests {
    @Test("failures pause for 10 ms, doubling to a second; only the first of a run is announced")
    func doubling() {
        var backoff = AcceptBackoff()
        var pauses: [Duration] = []
        var announced: [Bool] = []
        for _ in 0..<9 {
            guard case .pause(let pause, let announce) = backoff.acceptFailed() else { continue }
            pauses.append(pause)
            announced.append(announce)
        }
        #expect(
            pauses.map { $0.components.attoseconds / 1_000_000_000_000_000 + $0.components.seconds * 1000 }
                == [10, 20, 40, 80, 160, 320, 640, 1000, 1000])
        #expect(announced == [true] + Array(repeating: false, count: 8))
        #expect(backoff.state == .paused(pause: .seconds(1)))
    }

    @Test("a freed descriptor makes a paused acceptor retry now; an accepting one has nothing to retry")
    func descriptorFreed() {
        var backoff = AcceptBackoff()
        #expect(!backoff.shouldRetry())
        _ = backoff.acceptFailed()
        _ = backoff.acceptFailed()
        #expect(backoff.shouldRetry())
        // The retry fails again (the freed descriptor went elsewhere): the pause keeps doubling.
        let again = backoff.acceptFailed()
        #expect(again == .pause(.milliseconds(40), announce: false))
        // The next retry accepts: the run ends, and says so once.
        let ended = backoff.accepted()
        let endedTwice = backoff.accepted()
        #expect(ended && !endedTwice)
        #expect(!backoff.shouldRetry())
        // A new run starts from the first pause and is announced again.
        let fresh = backoff.acceptFailed()
        #expect(fresh == .pause(.milliseconds(10), announce: true))
    }
}
