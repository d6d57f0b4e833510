import PitlanePosix
import Testing

/// A loop-owned value carried by other threads is opened on its loop.
@Suite("Loop-bound values", .timeLimit(.minutes(1)))
struct LoopBoundTests {
    final class Counter {
        var count = 0
    }

    @Test("execute runs on the value's loop, from any thread, in order")
    func execute() async throws {
        let loop = try EventLoop.start(name: "bound")
        defer { loop.shutdownGracefully() }
        let bound = try await loop.submit { LoopBound(Counter(), loop: loop) }
        for _ in 0..<3 {
            bound.execute { counter in
                loop.assertInEventLoop()
                counter.count += 1
            }
        }
        let (count, onLoop) = try await loop.submit { (bound.value.count, loop.inEventLoop) }
        #expect(count == 3 && onLoop)
        #expect(!loop.inEventLoop)
    }
}
