import Testing

@testable import PitlanePosix

@Suite("Idle polling window", .timeLimit(.minutes(1)))
struct IdlePollingTests {
    @Test("the window opens at a quarter of the limit, doubles to it while events come soon, and closes while they do not")
    func windowAdapts() {
        var polling = IdlePolling(limit: .microseconds(200))
        #expect(polling.isEnabled)
        #expect(polling.windowNanoseconds == 0)
        var opened: [Int64] = []
        for _ in 0..<4 {
            polling.woke(afterIdleNanoseconds: 30_000)
            opened.append(polling.windowNanoseconds)
        }
        #expect(opened == [50_000, 100_000, 200_000, 200_000])
        var closed: [Int64] = []
        for _ in 0..<3 {
            polling.woke(afterIdleNanoseconds: 5_000_000)
            closed.append(polling.windowNanoseconds)
        }
        #expect(closed == [100_000, 50_000, 0])
    }

    @Test("a zero limit never polls")
    func disabled() {
        var polling = IdlePolling(limit: .zero)
        #expect(!polling.isEnabled)
        polling.woke(afterIdleNanoseconds: 0)
        #expect(polling.windowNanoseconds == 0)
    }
}
