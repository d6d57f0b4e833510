/// When a listener whose accepts fail for want of resources (no descriptors left: EMFILE,
/// ENFILE; no memory: ENOBUFS, ENOMEM) tries again. Pure: the ``Acceptor`` carries out its
/// answers, so a test steps it through every transition without a socket or a clock.
///
/// A failed accept pauses accepting for a while that doubles from 10 ms up to a second, so a
/// level-triggered loop does not spin on a listener that stays readable. A descriptor freed
/// meanwhile (a connection of the server's closed) ends the pause at once: a client that
/// connects once descriptors are free is served without waiting out the pause.
package struct AcceptBackoff: Equatable {
    package enum State: Equatable {
        case accepting
        /// Not watching the listener; trying again after `pause` unless a descriptor frees first.
        case paused(pause: Duration)
    }

    package private(set) var state = State.accepting

    package static let firstPause: Duration = .milliseconds(10)
    package static let longestPause: Duration = .seconds(1)

    package init() {}

    /// What the acceptor does after a failed accept.
    package enum OnFailure: Equatable {
        /// Stop watching the listener, say so (`announce`: the first failure of a run), and
        /// try again after `pause`.
        case pause(Duration, announce: Bool)
    }

    package mutating func acceptFailed() -> OnFailure {
        switch state {
        case .accepting:
            state = .paused(pause: Self.firstPause)
            return .pause(Self.firstPause, announce: true)
        case .paused(let pause):
            let next = min(pause * 2, Self.longestPause)
            state = .paused(pause: next)
            return .pause(next, announce: false)
        }
    }

    /// A connection was accepted: true when that ends a run of failures (say so).
    package mutating func accepted() -> Bool {
        guard case .paused = state else { return false }
        state = .accepting
        return true
    }

    /// A descriptor was freed (or the pause ended): true when the acceptor should try
    /// accepting now, because it is paused. It stays paused until an accept works, so a
    /// failure then doubles the pause as before.
    package func shouldRetry() -> Bool {
        if case .paused = state { return true }
        return false
    }
}
