/// What one replica tells the others when a feed moves: "`source` put `key` at `position`".
///
/// Replicas that share a database announce each commit on a PostgreSQL channel (`NOTIFY`); a
/// listener wakes the subscribers of `key` and reads the log, which stays the truth, so a
/// lost announcement delays an update and never loses it. The payload is written and parsed
/// here only: `source position key`, the key last so that it may hold spaces.
///
/// ```swift
/// try connection.notify(channel: "orders", payload: FeedAnnouncement(source: replica, position: 7, key: "pizza").payload)
/// let heard = FeedAnnouncement(payload: payload)  // nil for anything else on the channel
/// ```
public struct FeedAnnouncement: Sendable, Hashable {
    /// Who announces: a replica's id, or a run of a feed a replica leads; never holds a space.
    public var source: String
    /// Where the feed stands now: the sequence number of its newest update, or a tick.
    public var position: Int64
    /// The feed's key: an order id, a room, a race.
    public var key: String

    /// An announcement of `key` at `position` by `source` (which must not contain a space).
    public init(source: String, position: Int64, key: String) {
        precondition(!source.contains(" "), "an announcement's source has no spaces")
        self.source = source
        self.position = position
        self.key = key
    }

    /// Parses a payload `payload` as announced; nil when it is not one.
    public init?(payload: String) {
        let fields = payload.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, !fields[0].isEmpty, let position = Int64(fields[1]) else { return nil }
        source = String(fields[0])
        self.position = position
        key = String(fields[2])
    }

    /// The payload to send.
    public var payload: String { "\(source) \(position) \(key)" }
}
