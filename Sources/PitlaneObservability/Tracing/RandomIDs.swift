import Synchronization

/// Where trace and span ids come from: xoshiro256** (Blackman and Vigna), seeded once from
/// the system's random source and shared behind a lock. Ids must be unique and unguessable
/// in practice, not cryptographically strong (OpenTelemetry's SDKs draw them the same way);
/// drawing them from the system source took a getrandom(2) call per byte, two dozen system
/// calls per span.
struct RandomIDs {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    /// Seeded from `source`; a state of all zeros (which would only ever give zeros) is not
    /// possible, as the last word is made odd.
    init(seed source: inout some RandomNumberGenerator) {
        state = (source.next(), source.next(), source.next(), source.next() | 1)
    }

    /// The next 64 random bits.
    mutating func next() -> UInt64 {
        let result = rotated(state.1 &* 5, by: 7) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = rotated(state.3, by: 45)
        return result
    }

    /// The next 64 random bits that are not all zero (a span id's rule).
    mutating func nextNonZero() -> UInt64 {
        while true {
            let value = next()
            if value != 0 { return value }
        }
    }

    private func rotated(_ value: UInt64, by count: UInt64) -> UInt64 {
        value << count | value >> (64 - count)
    }

    private static let shared: Mutex<RandomIDs> = {
        var system = SystemRandomNumberGenerator()
        return Mutex(RandomIDs(seed: &system))
    }()

    /// Draws from the process's generator, under its lock: draw every id a span needs at once.
    static func draw<T: Sendable>(_ body: (inout RandomIDs) -> T) -> T {
        shared.withLock { body(&$0) }
    }
}
