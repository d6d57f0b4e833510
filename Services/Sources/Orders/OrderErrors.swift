import PitlaneCore
import PitlaneErrorDetails
import PitlaneProtobuf

/// The order tracker's rich errors: `google.rpc` details a client reads without parsing
/// messages (`error.detail(Google_Rpc_ErrorInfo.self)?.reason`).
public enum OrderErrors {
    /// `ErrorInfo.domain` of every order tracker error.
    public static let domain = "orders.pitlane.dev"

    /// OUT_OF_RANGE for a resume token older than what is retained: `ErrorInfo` reason
    /// `UPDATES_NOT_RETAINED`, with the oldest update id a watch can still resume from and the
    /// log's epoch.
    static func notRetained(orderID: String, oldest: String, epoch: UInt64) -> RPCError {
        make(
            .outOfRange,
            "the updates of order '\(orderID)' after that update id are no longer "
                + "retained; call GetOrder again and watch from its latest_update_id",
            [info("UPDATES_NOT_RETAINED", ["order_id": orderID, "oldest_retained_update_id": oldest, "epoch": hex(epoch)])])
    }

    /// OUT_OF_RANGE for a token from another epoch of the log (it was reset): `ErrorInfo`
    /// reason `EPOCH_CHANGED`, with both epochs.
    static func epochChanged(token: String, orderID: String, epoch: UInt64, tokenEpoch: UInt64) -> RPCError {
        make(
            .outOfRange,
            "update id \(token) is from another epoch of the update log "
                + "(the log was reset); call GetOrder again and watch from its latest_update_id",
            [info("EPOCH_CHANGED", ["order_id": orderID, "epoch": hex(epoch), "token_epoch": hex(tokenEpoch)])])
    }

    /// RESOURCE_EXHAUSTED for a watcher more than `limit` updates behind, with `RetryInfo`:
    /// resume (from the last applied update) after a moment.
    static func watcherTooSlow(limit: Int) -> RPCError {
        make(
            .resourceExhausted, "the watcher fell more than \(limit) updates behind; resume from the last update id it applied",
            [
                info("WATCHER_TOO_SLOW", ["buffer_limit": String(limit)]),
                Google_Rpc_RetryInfo.with { $0.retryDelay = .with { $0.seconds = 1 } },
            ])
    }

    private static func info(_ reason: String, _ metadata: [String: String]) -> Google_Rpc_ErrorInfo {
        .with {
            $0.reason = reason
            $0.domain = domain
            $0.metadata = .init(metadata)
        }
    }

    private static func hex(_ value: UInt64) -> String { String(value, radix: 16) }

    /// Generated messages always serialize; the plain error is only a formality.
    private static func make(_ code: RPCError.Code, _ message: String, _ details: [any Message]) -> RPCError {
        (try? RPCError(code: code, message: message, details: details)) ?? RPCError(code: code, message: message)
    }
}
