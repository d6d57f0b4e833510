import Glibc

/// An error from an ``EventLoop``: the loop has shut down, a file descriptor was registered
/// twice or not at all, or a system call failed.
public struct EventLoopError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case shutDown
        case alreadyRegistered(fd: Int32)
        case notRegistered(fd: Int32)
        case system(call: String, errno: Int32)
    }

    private let kind: Kind

    /// The loop has shut down (or is about to) and accepts no more work.
    public static let shutDown = EventLoopError(kind: .shutDown)

    /// `fd` is already registered with this loop; deregister it first.
    public static func alreadyRegistered(_ fd: Int32) -> EventLoopError {
        EventLoopError(kind: .alreadyRegistered(fd: fd))
    }

    /// `fd` is not registered with this loop.
    public static func notRegistered(_ fd: Int32) -> EventLoopError {
        EventLoopError(kind: .notRegistered(fd: fd))
    }

    /// The system call `call` failed with `errno`.
    public static func system(_ call: String, errno: Int32) -> EventLoopError {
        EventLoopError(kind: .system(call: call, errno: errno))
    }

    /// The system call that failed, if a system call failed.
    public var call: String? {
        if case .system(let call, _) = kind { return call }
        return nil
    }

    /// The `errno` of the failed system call, if a system call failed.
    public var errno: Int32? {
        if case .system(_, let errno) = kind { return errno }
        return nil
    }

    /// A one-line explanation; for a failed system call, the call and `strerror`'s text for its `errno`.
    public var description: String {
        switch kind {
        case .shutDown:
            "the event loop has shut down"
        case .alreadyRegistered(let fd):
            "file descriptor \(fd) is already registered with this event loop"
        case .notRegistered(let fd):
            "file descriptor \(fd) is not registered with this event loop"
        case .system(let call, let errno):
            "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        }
    }
}
