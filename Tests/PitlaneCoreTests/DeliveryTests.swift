import PitlaneCore
import TestSupport
import Testing

/// `BufferedStream.deliver(to:)` and `RPCAsyncSequence.delivering(to:while:)`: a stream's
/// elements handed over as they are written, with no task waiting for them.
@Suite("Delivery", .timeLimit(.minutes(1)))
struct DeliveryTests {
    struct Broken: Error {}

    /// What a receiver got: each element, then "end" or "failed".
    static func describe(_ delivery: Result<Int?, any Error>) -> String {
        switch delivery {
        case .success(let element?): String(element)
        case .success(nil): "end"
        case .failure: "failed"
        }
    }

    static func stream(consumed: Locked<Int>? = nil) -> BufferedStream<Int> {
        BufferedStream<Int>(
            highWatermark: 1_000, sizeOf: { _ in 1 },
            onConsume: { size in
                consumed?.withLock { $0 += size }
            })
    }

    @Test("what is buffered goes first, then each element as it is written, then the end")
    func backlogThenLiveThenEnd() async throws {
        let consumed = Locked(0)
        let stream = Self.stream(consumed: consumed)
        for element in 0..<3 { stream.yield(element) }
        let got = Locked<[String]>([])
        let receiver = BufferedStream<Int>.Receiver { delivery in got.withLock { $0.append(Self.describe(delivery)) } }
        stream.deliver(to: receiver)
        #expect(got.value == ["0", "1", "2"])
        #expect(stream.yield(3))
        try await stream.write(4)
        stream.finish()
        #expect(got.value == ["0", "1", "2", "3", "4", "end"])
        #expect(consumed.value == 5)  // flow-control window returned for every element
        #expect(!stream.yield(5))
        stream.stopDelivering(to: receiver)
    }

    @Test("a stream that ended before delivery began hands over its backlog and its end")
    func endedBeforeDelivery() {
        let stream = Self.stream()
        stream.yield(7)
        stream.finish(throwing: Broken())
        let got = Locked<[String]>([])
        let receiver = BufferedStream<Int>.Receiver { delivery in got.withLock { $0.append(Self.describe(delivery)) } }
        stream.deliver(to: receiver)
        #expect(got.value == ["7", "failed"])
    }

    @Test("after stopDelivering nothing more is handed over, and next() reads what follows")
    func stopReturnsToReading() async throws {
        let stream = Self.stream()
        let got = Locked<[String]>([])
        let receiver = BufferedStream<Int>.Receiver { delivery in got.withLock { $0.append(Self.describe(delivery)) } }
        stream.deliver(to: receiver)
        stream.yield(1)
        stream.stopDelivering(to: receiver)
        stream.yield(2)
        stream.finish()
        #expect(got.value == ["1"])
        #expect(try await stream.next() == 2)
        #expect(try await stream.next() == nil)
    }

    @Test("a producer waiting for room is released when delivery takes the buffer")
    func waitingProducerReleased() async throws {
        let stream = BufferedStream<Int>(highWatermark: 2, sizeOf: { _ in 1 })
        let got = Locked<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for element in 0..<5 { try await stream.write(element) }  // waits after the third
            }
            try await eventually("the producer waits") { stream.peakBufferedBytes == 3 }
            let receiver = BufferedStream<Int>.Receiver { delivery in
                if case .success(let element?) = delivery { got.withLock { $0.append(element) } }
            }
            stream.deliver(to: receiver)
            try await group.waitForAll()
            stream.stopDelivering(to: receiver)
        }
        #expect(got.value == [0, 1, 2, 3, 4])
    }

    @Test("delivering(to:while:) over a transport's stream: body runs while elements arrive, and returns its value")
    func sequenceOverStream() async throws {
        let stream = Self.stream()
        let got = Locked<[String]>([])
        let sequence = RPCAsyncSequence(stream: stream)
        let result = try await sequence.delivering(to: { delivery in got.withLock { $0.append(Self.describe(delivery)) } }) {
            stream.yield(1)
            stream.yield(2)
            stream.finish()
            return "body's value"
        }
        #expect(result == "body's value")
        #expect(got.value == ["1", "2", "end"])
    }

    @Test("a server's request parts are decoded as delivered; the first that fails to decode ends the delivery")
    func decodingSource() async throws {
        let parts = BufferedStream<RPCRequestPart>(highWatermark: 1_000, sizeOf: { _ in 1 })
        let checks = RequestMessageChecks(limit: .max)
        let sequence = RPCAsyncSequence<Int, any Error>(parts: parts, checks: checks) { part, _ in
            guard case .message(let bytes, _) = part, let first = bytes.first, first != 0xFF else { throw Broken() }
            return Int(first)
        }
        let got = Locked<[String]>([])
        try await sequence.delivering(to: { delivery in got.withLock { $0.append(Self.describe(delivery)) } }) {
            parts.yield(.message([4], []))
            parts.yield(.message([0xFF], []))
            parts.yield(.message([5], []))
            parts.finish()
        }
        #expect(got.value == ["4", "failed"])
    }

    @Test("any other sequence is read by a child task, delivered in order, and its end too")
    func wrappedSequence() async throws {
        let got = Locked<[String]>([])
        try await RPCAsyncSequence<Int, any Error>.elements([1, 2, 3]).delivering(to: { delivery in
            got.withLock { $0.append(Self.describe(delivery)) }
        }) {
            try await eventually("everything delivered") { got.value.count == 4 }
        }
        #expect(got.value == ["1", "2", "3", "end"])
    }

    @Test("a child task's delivery stops when body returns: nothing is handed over after")
    func wrappedStopsWithBody() async throws {
        let (elements, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
        let got = Locked<[String]>([])
        try await RPCAsyncSequence(wrapping: elements).delivering(to: { delivery in
            got.withLock { $0.append(Self.describe(delivery)) }
        }) {
            continuation.yield(1)
            try await eventually("the first delivered") { got.value == ["1"] }
        }
        continuation.yield(2)
        continuation.finish()
        #expect(got.value == ["1"])
    }
}
