/// Instants of `ContinuousClock` kept as durations after one fixed instant of the process.
///
/// `ContinuousClock.Instant` is a resilient type of the standard library: a struct that
/// stores one has a size other modules learn only at run time, so in code inlined into them
/// (the server's executor, compiled for each service) or generic over it, every value of the
/// struct in an async function is allocated on the task, and stays allocated while a handler
/// waits. A `Duration` is fixed-size. The conversion is exact both ways.
enum MonotonicEpoch {
    private static let origin = ContinuousClock.now

    static func offset(of instant: ContinuousClock.Instant) -> Duration {
        origin.duration(to: instant)
    }

    static func instant(at offset: Duration) -> ContinuousClock.Instant {
        origin.advanced(by: offset)
    }
}
