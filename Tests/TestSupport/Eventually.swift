/// Waits until `condition` holds, checking it again after each short pause; fails after
/// `limit` of real time. Real time only bounds how long a test waits for an outcome.
public func eventually(
    within limit: Duration = .seconds(20), _ what: String = "the condition",
    _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let giveUp = clock.now + limit
    while try await !condition() {
        guard clock.now < giveUp else { throw TimedOut(what: what, limit: limit) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// ``eventually(within:_:_:)`` gave up.
public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public let limit: Duration
    public init(what: String, limit: Duration) {
        self.what = what
        self.limit = limit
    }
    public var description: String { "\(what) did not hold within \(limit)" }
}
