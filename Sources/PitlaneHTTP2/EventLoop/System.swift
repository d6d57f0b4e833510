import Glibc

/// Facts about the machine that size thread pools.
public enum System {
    /// The number of processors currently online (at least 1), from
    /// `sysconf(_SC_NPROCESSORS_ONLN)`; the default thread count of an ``EventLoopGroup``.
    public static var coreCount: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }
}
