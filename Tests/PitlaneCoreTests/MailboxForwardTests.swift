import PitlaneCore
import TestSupport
import Testing

/// `Mailbox.forward(trying:write:)`: producers hand elements straight to the writer while it
/// takes them; what it refuses, and what arrives meanwhile, goes through the reader's `write`.
@Suite("Mailbox forwarding", .timeLimit(.minutes(1)))
struct MailboxForwardTests {
    struct Overflow: Error {}

    @Test("every offered element is written once, in order, whichever way it went")
    func orderAcrossBothPaths() async throws {
        let mailbox = BoundedMailbox<Int>(limit: 1_000) { _ in Overflow() }
        let written = Locked<[Int]>([])
        let paths = Locked((direct: 0, waited: 0))
        let calls = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await mailbox.forward(trying: { element in
                    // Refuses every third element offered straight away: the reader writes it.
                    let call = calls.withLock {
                        $0 += 1
                        return $0
                    }
                    guard call % 3 != 0 else { return false }
                    written.withLock { $0.append(element) }
                    paths.withLock { $0.direct += 1 }
                    return true
                }) { element in
                    await Task.yield()
                    written.withLock { $0.append(element) }
                    paths.withLock { $0.waited += 1 }
                }
            }
            for element in 0..<300 {
                mailbox.offer(element)
                if element % 7 == 0 { await Task.yield() }
            }
            mailbox.end(.finished)
            try await group.waitForAll()
        }
        #expect(written.value == Array(0..<300))
        #expect(paths.value.direct + paths.value.waited == 300)
    }

    @Test("a reader that is behind gets the buffer's error, and nothing more is handed over")
    func overflowEndsForwarding() async throws {
        let mailbox = BoundedMailbox<Int>(limit: 2) { _ in Overflow() }
        let release = AsyncStream.makeStream(of: Void.self)
        let forwarding = Task {
            try await mailbox.forward(trying: { _ in false }) { _ in
                for await _ in release.stream { break }  // the peer is behind until released
            }
        }
        // The first element goes to the reader (refused straight away); the next ones wait.
        for element in 0..<10 { mailbox.offer(element) }
        #expect(mailbox.offer(10) == false)
        release.continuation.finish()
        await #expect(throws: Overflow.self) { try await forwarding.value }
    }

    @Test("what waited in the buffer before the reader came goes to tryWrite first; only what it refuses to write")
    func bufferedGoesDirectFirst() async throws {
        let mailbox = BoundedMailbox<Int>(limit: 100) { _ in Overflow() }
        for element in 0..<4 { mailbox.offer(element) }
        mailbox.end(.finished)
        let direct = Locked<[Int]>([])
        let waited = Locked<[Int]>([])
        try await mailbox.forward(trying: { element in
            guard element != 2 else { return false }  // the writer is behind for this one
            direct.withLock { $0.append(element) }
            return true
        }) { element in
            waited.withLock { $0.append(element) }
        }
        #expect(direct.value == [0, 1, 3])
        #expect(waited.value == [2])
    }
}

/// `Mailbox.deliver(to:ended:)`: a consumer with no task; what it refuses waits in the buffer
/// until `resumeDelivery`, and the end reaches it once.
@Suite("Mailbox delivery without a reader", .timeLimit(.minutes(1)))
struct MailboxDeliveryTests {
    struct Overflow: Error {}

    /// A consumer that takes elements while it has room.
    final class Consumer: Sendable {
        let taken = Locked<[Int]>([])
        let room = Locked(0)
        let ends = Locked<[String]>([])

        func take(_ element: Int) -> Bool {
            room.withLock { room in
                guard room > 0 else { return false }
                room -= 1
                taken.withLock { $0.append(element) }
                return true
            }
        }

        func ended(_ end: BoundedMailbox<Int>.End) {
            switch end {
            case .finished: ends.withLock { $0.append("finished") }
            case .failed(let error): ends.withLock { $0.append("\(type(of: error))") }
            }
        }
    }

    @Test("buffered elements first, then each as offered; a refused one and those after it wait for resumeDelivery, in order")
    func refusalAndResumption() {
        let mailbox = BoundedMailbox<Int>(limit: 100) { _ in Overflow() }
        let consumer = Consumer()
        consumer.room.withLock { $0 = 3 }
        mailbox.offer(0)
        mailbox.offer(1)
        mailbox.deliver(to: consumer.take, ended: consumer.ended)
        #expect(consumer.taken.value == [0, 1])
        for element in 2..<10 { mailbox.offer(element) }
        #expect(consumer.taken.value == [0, 1, 2])
        mailbox.resumeDelivery()  // no room yet: nothing moves
        #expect(consumer.taken.value == [0, 1, 2])
        consumer.room.withLock { $0 = 4 }
        mailbox.resumeDelivery()
        #expect(consumer.taken.value == Array(0..<7))
        consumer.room.withLock { $0 = 100 }
        mailbox.resumeDelivery()
        mailbox.offer(10)
        #expect(consumer.taken.value == Array(0...10))
        mailbox.end(.finished)
        mailbox.end(.finished)
        #expect(consumer.ends.value == ["finished"])
        #expect(mailbox.offer(11) == false)
    }

    @Test("an end while the consumer is behind waits for what it has not taken; stopDelivery drops it and ends at once")
    func endWhileBehind() {
        let mailbox = BoundedMailbox<Int>(limit: 100) { _ in Overflow() }
        let consumer = Consumer()
        mailbox.deliver(to: consumer.take, ended: consumer.ended)
        for element in 0..<5 { mailbox.offer(element) }
        mailbox.end(.failed(Overflow()))
        #expect(consumer.ends.value.isEmpty)
        consumer.room.withLock { $0 = 3 }
        mailbox.resumeDelivery()
        #expect(consumer.taken.value == [0, 1, 2])
        #expect(consumer.ends.value.isEmpty)
        consumer.room.withLock { $0 = 10 }
        mailbox.resumeDelivery()
        #expect(consumer.taken.value == [0, 1, 2, 3, 4])
        #expect(consumer.ends.value == ["Overflow"])

        let stopped = BoundedMailbox<Int>(limit: 100) { _ in Overflow() }
        let gone = Consumer()
        stopped.deliver(to: gone.take, ended: gone.ended)
        for element in 0..<5 { stopped.offer(element) }
        stopped.end(.finished)
        stopped.stopDelivery(CancellationError())
        stopped.stopDelivery(CancellationError())
        #expect(gone.ends.value == ["CancellationError"])
        gone.room.withLock { $0 = 10 }
        stopped.resumeDelivery()
        #expect(gone.taken.value.isEmpty)
    }

    @Test("a consumer behind by more than the buffer ends with its error, once; one attached after the end hears it at once")
    func overflow() {
        let mailbox = BoundedMailbox<Int>(limit: 2) { _ in Overflow() }
        let consumer = Consumer()
        mailbox.deliver(to: consumer.take, ended: consumer.ended)
        #expect(mailbox.offer(0))  // refused: it waits
        #expect(mailbox.offer(1))
        #expect(mailbox.offer(2))
        #expect(mailbox.offer(3) == false)
        #expect(consumer.ends.value == ["Overflow"])
        consumer.room.withLock { $0 = 10 }
        mailbox.resumeDelivery()
        #expect(consumer.taken.value.isEmpty)

        let ended = BoundedMailbox<Int>(limit: 2) { _ in Overflow() }
        ended.offer(7)
        ended.end(.finished)
        let late = Consumer()
        late.room.withLock { $0 = 10 }
        ended.deliver(to: late.take, ended: late.ended)
        #expect(late.taken.value == [7])
        #expect(late.ends.value == ["finished"])
    }
}
