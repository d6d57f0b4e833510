import Foundation

extension Google_Protobuf_Timestamp {
    /// A timestamp of `seconds` since 1970-01-01T00:00:00Z plus `nanos` (0 ..< 1_000_000_000).
    public init(seconds: Int64, nanos: Int32 = 0) {
        self.init()
        self.seconds = seconds
        self.nanos = nanos
    }

    /// The timestamp nearest to `date`, to the nanosecond.
    public init(date: Date) {
        self.init(roundingTimeIntervalSince1970: date.timeIntervalSince1970)
    }

    /// The timestamp nearest to a number of seconds since 1970, to the nanosecond.
    public init(roundingTimeIntervalSince1970 interval: TimeInterval) {
        let whole = interval.rounded(.down)
        var seconds = Int64(whole)
        var nanos = Int32(((interval - whole) * 1e9).rounded())
        if nanos >= 1_000_000_000 {
            seconds += 1
            nanos -= 1_000_000_000
        }
        self.init(seconds: seconds, nanos: nanos)
    }

    /// Seconds since 1970 as a floating-point number (sub-microsecond precision is lost).
    public var timeIntervalSince1970: TimeInterval {
        TimeInterval(seconds) + TimeInterval(nanos) / 1e9
    }

    /// The timestamp as a `Date`.
    public var date: Date {
        Date(timeIntervalSince1970: timeIntervalSince1970)
    }
}
