import PitlaneCore
import PitlaneErrorDetails
import Testing

@testable import PitlaneLive

/// Resume tokens and the typed errors of a feed, without a database: every way a token can be
/// wrong, and the status and details a client gets for each.
@Suite("Resume tokens and feed errors", .timeLimit(.minutes(1)))
struct FeedPositionTests {
    let names = FeedNames(domain: "feeds.example.com", keyField: "order_id", noun: "order", restart: "call GetOrder again")
    let epoch: UInt64 = 0x0123_4567_89ab_cdef

    @Test("a token round-trips for its key and epoch, from the first update to the largest sequence")
    func roundTrip() throws {
        for sequence: Int64 in [0, 1, 2, 255, 1 << 40, (1 << 48) - 1] {
            let position = FeedPosition(epoch: epoch, key: "pizza", sequence: sequence)
            #expect(position.token.count == 38 && position.token.hasPrefix("u1"))
            #expect(try FeedPosition.parse(position.token, key: "pizza", epoch: epoch, names: names) == position)
        }
    }

    @Test(
        "what is not a token is INVALID_ARGUMENT, MALFORMED_RESUME_TOKEN",
        arguments: [
            "", "u1", "not a token", "u2" + String(repeating: "0", count: 36), "u1" + String(repeating: "0", count: 35),
            "u1" + String(repeating: "0", count: 37), "u1" + String(repeating: "G", count: 36), "u1" + String(repeating: "A", count: 36),
            "u1" + String(repeating: "0", count: 35) + "é",
        ])
    func malformed(token: String) {
        let error = #expect(throws: FeedError.self) { try FeedPosition.parse(token, key: "pizza", epoch: epoch, names: names) }
        #expect(error?.reason == .malformedToken)
        #expect(error?.rpcError.code == .invalidArgument)
    }

    @Test("another key's token is INVALID_ARGUMENT, naming the key")
    func anotherKey() {
        let token = FeedPosition(epoch: epoch, key: "pasta", sequence: 3).token
        let error = #expect(throws: FeedError.self) { try FeedPosition.parse(token, key: "pizza", epoch: epoch, names: names) }
        #expect(error?.reason == .tokenOfAnotherKey)
        #expect(error?.rpcError.code == .invalidArgument)
        #expect(error?.metadata["order_id"] == "pizza")
    }

    @Test("another epoch's token is OUT_OF_RANGE with ErrorInfo EPOCH_CHANGED and both epochs")
    func anotherEpoch() throws {
        let token = FeedPosition(epoch: 7, key: "pizza", sequence: 3).token
        let error = try #require(throws: FeedError.self) { try FeedPosition.parse(token, key: "pizza", epoch: epoch, names: names) }
        let rpcError = error.rpcError
        #expect(rpcError.code == .outOfRange)
        let info = try #require(rpcError.detail(Google_Rpc_ErrorInfo.self))
        #expect(info.reason == "EPOCH_CHANGED" && info.domain == "feeds.example.com")
        #expect(info.metadata["epoch"] == "123456789abcdef" && info.metadata["token_epoch"] == "7" && info.metadata["order_id"] == "pizza")
        #expect(rpcError.message.contains("call GetOrder again"))
    }

    @Test("a position no longer retained is OUT_OF_RANGE naming the oldest token that still resumes")
    func notRetained() throws {
        let oldest = FeedPosition(epoch: epoch, key: "pizza", sequence: 40)
        let rpcError = FeedError.notRetained(key: "pizza", oldest: oldest, names: names).rpcError
        #expect(rpcError.code == .outOfRange)
        let info = try #require(rpcError.detail(Google_Rpc_ErrorInfo.self))
        #expect(info.reason == "UPDATES_NOT_RETAINED")
        #expect(info.metadata["oldest_retained_update_id"] == oldest.token)
        #expect(try FeedPosition.parse(oldest.token, key: "pizza", epoch: epoch, names: names).sequence == 40)
    }

    @Test("a slow subscriber is RESOURCE_EXHAUSTED with RetryInfo; an unknown key NOT_FOUND; a token ahead INVALID_ARGUMENT")
    func otherErrors() throws {
        let slow = FeedError.subscriberTooSlow(limit: 64, names: names).rpcError
        #expect(slow.code == .resourceExhausted)
        #expect(slow.detail(Google_Rpc_RetryInfo.self)?.retryDelay.seconds == 1)
        #expect(slow.detail(Google_Rpc_ErrorInfo.self)?.metadata["buffer_limit"] == "64")
        #expect(FeedError.unknownKey("pizza", names: names).rpcError.code == .notFound)
        #expect(FeedError.tokenAhead("u1…", key: "pizza", names: names).rpcError.code == .invalidArgument)
        // Thrown from a handler, a FeedError is the status the client sees.
        #expect(RPCError.from(FeedError.unknownKey("pizza", names: names)).code == .notFound)
    }
}

/// The one announcement format of every feed across replicas.
@Suite("Feed announcements", .timeLimit(.minutes(1)))
struct FeedAnnouncementTests {
    @Test("an announcement round-trips, a key with spaces included")
    func roundTrip() {
        for announcement in [
            FeedAnnouncement(source: "k3x9", position: 42, key: "pizza"),
            FeedAnnouncement(source: "17", position: 0, key: "Duck Pond Dash"),
            FeedAnnouncement(source: "r", position: -1, key: ""),
        ] {
            #expect(FeedAnnouncement(payload: announcement.payload) == announcement)
        }
    }

    @Test("anything else on the channel is not an announcement", arguments: ["", "a", "a b", "a 1", " 1 key", "a x key", "a 1.5 key"])
    func notAnnouncements(payload: String) {
        #expect(FeedAnnouncement(payload: payload) == nil)
    }
}
