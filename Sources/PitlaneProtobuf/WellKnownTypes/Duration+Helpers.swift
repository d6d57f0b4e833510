import Foundation

extension Google_Protobuf_Duration {
    /// A duration of `seconds` plus `nanos`; both carry the same sign.
    public init(seconds: Int64, nanos: Int32 = 0) {
        self.init()
        self.seconds = seconds
        self.nanos = nanos
    }

    /// The duration nearest to `interval` seconds, rounded to a nanosecond by `rule`.
    ///
    /// ```swift
    /// entry.gapToLeader = .init(rounding: 1.25, rule: .towardZero)
    /// ```
    public init(rounding interval: TimeInterval, rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) {
        let totalNanos = (interval * 1e9).rounded(rule)
        let seconds = (totalNanos / 1e9).rounded(.towardZero)
        self.init(seconds: Int64(seconds), nanos: Int32(totalNanos - seconds * 1e9))
    }

    /// The duration nearest to a Swift `Duration`, rounded to a nanosecond by `rule`.
    public init(rounding duration: Swift.Duration, rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) {
        let (seconds, attoseconds) = duration.components
        let total = Int128(seconds) * 1_000_000_000_000_000_000 + Int128(attoseconds)
        let (quotient, remainder) = total.quotientAndRemainder(dividingBy: 1_000_000_000)
        let totalNanos = quotient + Self.roundingAdjustment(quotient: quotient, remainder: remainder, rule: rule)
        let (wholeSeconds, nanos) = totalNanos.quotientAndRemainder(dividingBy: 1_000_000_000)
        self.init(seconds: Int64(wholeSeconds), nanos: Int32(nanos))
    }

    /// The protobuf duration of a Swift `Duration`, truncated to whole nanoseconds.
    public init(_ duration: Swift.Duration) {
        self.init(rounding: duration, rule: .towardZero)
    }

    /// The duration in seconds as a floating-point number.
    public var timeInterval: TimeInterval {
        TimeInterval(seconds) + TimeInterval(nanos) / 1e9
    }

    /// What to add to a truncated quotient to round it by `rule`, given the remainder of
    /// dividing attoseconds by 10^9 (its sign is the dividend's).
    private static func roundingAdjustment(quotient: Int128, remainder: Int128, rule: FloatingPointRoundingRule) -> Int128 {
        guard remainder != 0 else { return 0 }
        let direction: Int128 = remainder < 0 ? -1 : 1
        let half: Int128 = 500_000_000
        let magnitude = remainder.magnitude
        switch rule {
        case .towardZero: return 0
        case .awayFromZero: return direction
        case .up: return direction > 0 ? 1 : 0
        case .down: return direction < 0 ? -1 : 0
        case .toNearestOrAwayFromZero: return magnitude >= half ? direction : 0
        case .toNearestOrEven:
            if magnitude > half { return direction }
            if magnitude < half { return 0 }
            return quotient.isMultiple(of: 2) ? 0 : direction
        @unknown default: return magnitude >= half ? direction : 0
        }
    }
}

extension Swift.Duration {
    /// The Swift `Duration` a protobuf `Duration` describes.
    public init(_ duration: Google_Protobuf_Duration) {
        self = .seconds(duration.seconds) + .nanoseconds(Int64(duration.nanos))
    }
}
