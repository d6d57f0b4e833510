import LiveChat
import Orders
import PitlaneCore
import PitlaneLive
import PitlaneSQL
import ServiceHarness
import TestSupport
import Testing

/// Two replicas in one process, each with its own pool and listener on one PostgreSQL
/// database: what one commits, the other's watchers and rooms get, in the database's order.
@Suite("Replicas on one PostgreSQL database", .timeLimit(.minutes(3)))
struct ReplicaTests {
    @Test("an update published on replica A wakes B's watchers; A's tokens resume on B; the epoch is the database's")
    func ordersAcrossReplicas() async throws {
        let url = try await TestPostgres.freshDatabase()
        let a = try OrderLog(database: TestBackend.postgresDatabase(url))
        let b = try OrderLog(database: TestBackend.postgresDatabase(url))
        #expect(a.epoch == b.epoch)
        let relay = try #require(b.feed.relay())
        defer { relay.stop() }
        _ = try await a.createOrder(id: "o", customerID: "c", etaDisplay: "")
        let subscription = b.feed.subscribers.subscribe(to: "o")
        defer { b.feed.subscribers.unsubscribe(subscription) }
        var published: [LoggedUpdate] = []
        for index in 0..<20 { published.append(try await a.publish(.etaChanged(.with { $0.etaDisplay = "\(index)" }), to: "o")) }
        // Wake-ups carry the newest update of what arrived together; the last one always comes.
        var newest: Int64 = 0
        while newest < 20, case .update(let entry)? = try await subscription.next() { newest = max(newest, entry.sequence) }
        #expect(newest == 20)
        #expect(try await b.startSequence(for: "o", since: published[4].message.updateID) == 5)
        #expect(try await b.updates(of: "o", after: 5).map(\.sequence) == Array(6...20))
    }

    @Test("chat: senders on two replicas, participants on both see one order, ids 1...n, and the same history")
    func chatAcrossReplicas() async throws {
        let url = try await TestPostgres.freshDatabase()
        let a = try ChatRooms(database: TestBackend.postgresDatabase(url))
        let b = try ChatRooms(database: TestBackend.postgresDatabase(url))
        let relays = [a.relay(), b.relay()].compactMap { $0 }
        defer { relays.forEach { $0.stop() } }
        #expect(relays.count == 2)
        let onA = try a.join(room: "r", nickname: "ann", mailbox: a.makeMailbox())
        let onB = try b.join(room: "r", nickname: "bob", mailbox: b.makeMailbox())
        let count = 60
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for index in 0..<count / 2 { try await a.send("a\(index)", from: onA) } }
            group.addTask { for index in 0..<count / 2 { try await b.send("b\(index)", from: onB) } }
            try await group.waitForAll()
        }
        @Sendable func messages(_ participant: ChatRooms.Participant) async throws -> [ChatMessage] {
            var received: [ChatMessage] = []
            while received.count < count, let event = try await participant.mailbox.next() {
                if case .message(let message) = event.event { received.append(message) }
            }
            return received
        }
        let seenOnA = try await messages(onA)
        let seenOnB = try await messages(onB)
        #expect(seenOnA.map(\.id) == Array(1...Int64(count)))
        #expect(seenOnA.map(\.text) == seenOnB.map(\.text))
        // A joiner on either replica gets the same history.
        let lateA = try a.join(room: "r", nickname: "cy", mailbox: a.makeMailbox())
        let lateB = try b.join(room: "r", nickname: "di", mailbox: b.makeMailbox())
        let historyA = history(lateA)
        let historyB = history(lateB)
        #expect(historyA == historyB)
        #expect(historyA.count == 50 && historyA.last == seenOnA.last?.text)
    }

    private func history(_ participant: ChatRooms.Participant) -> [String] {
        var texts: [String] = []
        while let event = participant.mailbox.poll() {
            if case .message(let message) = event.event { texts.append(message.text) }
        }
        return texts
    }
}
