import PitlaneCore
import PitlaneErrorDetails
import PitlaneProtobuf

/// How a feed's errors name things: the `ErrorInfo` domain, the metadata field that holds a
/// key, and the words of the messages a client reads.
///
/// ```swift
/// let names = FeedNames(domain: "orders.example.com", keyField: "order_id", noun: "order",
///                       restart: "call GetOrder again and watch from its latest_update_id")
/// ```
public struct FeedNames: Sendable {
    /// `ErrorInfo.domain` of the feed's errors, such as `orders.example.com`.
    public var domain: String
    /// The `ErrorInfo.metadata` field that names the key, such as `order_id`.
    public var keyField: String
    /// What a key is called in messages, such as `order`.
    public var noun: String
    /// What a client whose token no longer resumes should do, such as "call GetOrder again".
    public var restart: String

    /// Names for a feed's errors; see the properties.
    public init(domain: String, keyField: String, noun: String, restart: String) {
        self.domain = domain
        self.keyField = keyField
        self.noun = noun
        self.restart = restart
    }
}

/// Why a subscription to a feed cannot start or go on, with the gRPC status and the
/// `google.rpc` details a client acts on (`error.detail(Google_Rpc_ErrorInfo.self)?.reason`)
/// without parsing the message.
public struct FeedError: Error, Sendable, CustomStringConvertible, RPCErrorConvertible {
    /// What went wrong; the raw value is `ErrorInfo.reason`.
    public enum Reason: String, Sendable {
        /// The resume token is not a token (INVALID_ARGUMENT).
        case malformedToken = "MALFORMED_RESUME_TOKEN"
        /// The resume token is another key's (INVALID_ARGUMENT).
        case tokenOfAnotherKey = "RESUME_TOKEN_OF_ANOTHER_KEY"
        /// The resume token is ahead of the key's log (INVALID_ARGUMENT).
        case tokenAhead = "RESUME_TOKEN_AHEAD"
        /// The resume token is from another epoch of the log, which was reset (OUT_OF_RANGE).
        case epochChanged = "EPOCH_CHANGED"
        /// The updates after the token are no longer retained (OUT_OF_RANGE).
        case notRetained = "UPDATES_NOT_RETAINED"
        /// The key does not exist (NOT_FOUND).
        case unknownKey = "UNKNOWN_KEY"
        /// The subscriber fell further behind than its buffer holds (RESOURCE_EXHAUSTED, with
        /// `RetryInfo`: resume from the last update it applied after a moment).
        case subscriberTooSlow = "SUBSCRIBER_TOO_SLOW"
    }

    /// What went wrong.
    public let reason: Reason
    /// The status a caller sees.
    public let code: RPCError.Code
    /// What a person reads.
    public let message: String
    /// The `ErrorInfo` domain.
    public let domain: String
    /// The `ErrorInfo` metadata: the key, positions, epochs.
    public let metadata: [String: String]

    /// The message.
    public var description: String { message }

    /// The status, message and details: `ErrorInfo` (reason, domain, metadata), and for a slow
    /// subscriber `RetryInfo`.
    public var rpcError: RPCError {
        var details: [any Message] = [
            Google_Rpc_ErrorInfo.with {
                $0.reason = reason.rawValue
                $0.domain = domain
                $0.metadata = .init(metadata)
            }
        ]
        if reason == .subscriberTooSlow { details.append(Google_Rpc_RetryInfo.with { $0.retryDelay = .with { $0.seconds = 1 } }) }
        // Generated messages always serialize; the plain error is only a formality.
        return (try? RPCError(code: code, message: message, details: details)) ?? RPCError(code: code, message: message)
    }

    private init(_ reason: Reason, _ code: RPCError.Code, _ message: String, _ names: FeedNames, _ metadata: [String: String]) {
        self.reason = reason
        self.code = code
        self.message = message
        domain = names.domain
        self.metadata = metadata
    }

    /// `token` is not a resume token.
    public static func malformedToken(_ token: String, names: FeedNames) -> FeedError {
        FeedError(.malformedToken, .invalidArgument, "'\(token.prefix(64))' is not an update id", names, [:])
    }

    /// `token` is another key's.
    public static func tokenOfAnotherKey(_ token: String, key: String, names: FeedNames) -> FeedError {
        FeedError(
            .tokenOfAnotherKey, .invalidArgument, "update id \(token) belongs to another \(names.noun), not '\(key)'", names,
            [names.keyField: key])
    }

    /// `token` is ahead of the key's log.
    public static func tokenAhead(_ token: String, key: String, names: FeedNames) -> FeedError {
        FeedError(
            .tokenAhead, .invalidArgument, "update id \(token) is ahead of \(names.noun) '\(key)''s log", names, [names.keyField: key])
    }

    /// `token` is from epoch `tokenEpoch`; the log is at `epoch`.
    public static func epochChanged(_ token: String, key: String, epoch: UInt64, tokenEpoch: UInt64, names: FeedNames) -> FeedError {
        FeedError(
            .epochChanged, .outOfRange,
            "update id \(token) is from another epoch of the update log (the log was reset); \(names.restart)", names,
            [names.keyField: key, "epoch": String(epoch, radix: 16), "token_epoch": String(tokenEpoch, radix: 16)])
    }

    /// The updates after the token are gone; `oldest` is the oldest position a subscription
    /// can still resume from.
    public static func notRetained(key: String, oldest: FeedPosition, names: FeedNames) -> FeedError {
        FeedError(
            .notRetained, .outOfRange,
            "the updates of \(names.noun) '\(key)' after that update id are no longer retained; \(names.restart)", names,
            [names.keyField: key, "oldest_retained_update_id": oldest.token, "epoch": String(oldest.epoch, radix: 16)])
    }

    /// `key` does not exist.
    public static func unknownKey(_ key: String, names: FeedNames) -> FeedError {
        FeedError(.unknownKey, .notFound, "no \(names.noun) '\(key)'", names, [names.keyField: key])
    }

    /// The subscriber fell more than `limit` updates behind.
    public static func subscriberTooSlow(limit: Int, names: FeedNames) -> FeedError {
        FeedError(
            .subscriberTooSlow, .resourceExhausted,
            "the watcher fell more than \(limit) updates behind; resume from the last update id it applied", names,
            ["buffer_limit": String(limit)])
    }
}
