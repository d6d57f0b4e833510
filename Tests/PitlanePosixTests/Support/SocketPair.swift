import Glibc
import PitlanePosix

/// A connected pair of non-blocking Unix stream sockets, as raw descriptors the caller closes.
func makeSocketPair() throws -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    guard socketpair(AF_UNIX, type, 0, &fds) == 0 else {
        throw SocketError(call: "socketpair", errno: errno)
    }
    return (fds[0], fds[1])
}
