import CLinux
import Glibc

/// Facts about the machine that size thread pools, and the process's signal mask.
public enum System {
    /// The number of processors this process may run on (at least 1): its CPU affinity mask
    /// (so `taskset -c 0` means 1), else `sysconf(_SC_NPROCESSORS_ONLN)`. The default thread
    /// count of an ``EventLoopGroup``: more loops than cores only adds context switches.
    public static var coreCount: Int {
        var mask = [UInt64](repeating: 0, count: 16)  // 1,024 CPUs, glibc's cpu_set_t
        let read = mask.withUnsafeMutableBytes { CLinux.sched_getaffinity(0, UInt($0.count), $0.baseAddress) == 0 }
        if read {
            let allowed = mask.reduce(0) { $0 + $1.nonzeroBitCount }
            if allowed > 0 { return allowed }
        }
        return max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    /// Lets SIGINT and SIGTERM through to this thread (call it first thing, on the main thread).
    /// A process started from a thread that blocks them (a test runner's thread pool, say)
    /// inherits that mask, and would then ignore them until killed.
    public static func unblockTerminationSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }
}

/// One line on standard error, written whole (one `write`, so lines from several threads do
/// not interleave).
package func logToStandardError(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    _ = Glibc.write(STDERR_FILENO, &bytes, bytes.count)
}
