/// Receives readiness events for one file descriptor registered with an ``EventLoop``.
///
/// Every method is called on the loop's thread. The loop holds the handler strongly from
/// ``EventLoop/register(_:handler:readable:writable:)`` until the descriptor is deregistered,
/// and never calls it afterwards, not even for events already returned by the same
/// `epoll_wait`.
///
/// Registration is level-triggered: while the descriptor stays readable (writable) and that
/// interest is on, the handler is called again on every loop iteration. A handler may
/// therefore stop reading after a bounded amount, to be fair to other descriptors, and will
/// be called again; but it must turn writable interest off when it has nothing to write, or
/// the loop spins.
///
/// For one readiness report the loop calls ``readable()``, then ``writable()``, each if the
/// descriptor is ready for it and the handler (still) registered with that interest, then,
/// on error or hang-up, possibly ``errorOrHangUp()``.
public protocol FileDescriptorHandler: AnyObject {
    /// The descriptor has bytes (or a connection, or end-of-file) to read.
    func readable()

    /// The descriptor accepts writes, or a non-blocking `connect` finished.
    func writable()

    /// The kernel reported an error or hang-up (`EPOLLERR`, `EPOLLHUP`) that ``readable()``
    /// will not deliver: the handler is not reading, or nothing is left to read. A handler
    /// that is reading is not called here; it keeps getting ``readable()`` and learns of the
    /// condition from the read itself (end of stream or the error), after the bytes still
    /// buffered. A reading handler must therefore act on end of stream, or it is called again
    /// and again.
    ///
    /// These conditions do not clear, so the loop has already deregistered the handler when
    /// it calls this. The handler should find out what happened (``Socket/finishConnect()``
    /// or a read reports the error) and close its descriptor. Called at most once per
    /// registration.
    func errorOrHangUp()

    /// The loop is shutting down and has deregistered the handler: close the descriptor and
    /// fail whatever waits on it. The loop does not close descriptors it does not own.
    func close()
}
