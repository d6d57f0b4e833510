import Glibc

/// How long an event loop that ran out of work keeps polling before it sleeps in
/// `epoll_wait`, adapted to the traffic the way the Linux guest halt-polling governor adapts
/// its window (Documentation/virt/guest-halt-polling.rst): the window grows while events come
/// soon after the loop would have slept, and shrinks while they do not.
///
/// Why: a thread that sleeps gives its CPU back, and on a virtual machine whose vCPU then
/// halts, waking it again costs the wake-up IPI and the vCPU's re-entry, here 20–25 µs of
/// scheduling delay per wake-up (`perf sched timehist`), more than the server-side cost of
/// a whole unary call. Under a lone caller's back-and-forth (one call in flight, a ping-pong
/// stream) every request paid it twice per round trip. Polling for a little while catches the
/// next request with the CPU still running; while traffic is sparse the window shrinks to
/// nothing, so an idle loop uses no CPU.
///
/// Polling does not yield between polls: `sched_yield` hands the CPU to any runnable thread,
/// even a `SCHED_IDLE` one, for its whole slice (milliseconds, measured), which is worse than
/// sleeping. A polling loop is to the scheduler a thread computing for at most `limit`, and a
/// thread that wakes on its core preempts it as it would any other.
struct IdlePolling {
    /// The longest window; 0 turns polling off.
    let limitNanoseconds: Int64
    /// The current window.
    private(set) var windowNanoseconds: Int64 = 0

    /// The first window after none: a quarter of the limit (the kernel's defaults are 50 µs
    /// of 200 µs).
    private var startNanoseconds: Int64 { limitNanoseconds / 4 }

    init(limit: Duration) {
        let (seconds, attoseconds) = limit.components
        limitNanoseconds = max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    var isEnabled: Bool { limitNanoseconds > 0 }

    /// The loop polled its whole window, slept, and woke `idleNanoseconds` after it ran out of
    /// work: woken within the limit, a longer window would have caught the event, so the
    /// window doubles (to the limit); woken later, it halves, and below the first window it
    /// closes.
    mutating func woke(afterIdleNanoseconds idleNanoseconds: Int64) {
        if idleNanoseconds <= limitNanoseconds {
            windowNanoseconds = min(limitNanoseconds, max(startNanoseconds, windowNanoseconds * 2))
        } else {
            windowNanoseconds /= 2
            if windowNanoseconds < startNanoseconds { windowNanoseconds = 0 }
        }
    }

    /// Monotonic time in nanoseconds, read through the vDSO (no system call).
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
