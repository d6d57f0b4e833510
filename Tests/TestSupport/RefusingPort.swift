import Glibc

/// A port on 127.0.0.1 where connecting is refused, for as long as this lives: a socket bound
/// there that never listens. No other test's listener can take the port meanwhile, as it
/// could if the test closed a listener to free a port.
public final class RefusingPort: Sendable {
    public let port: Int
    private let holder: Int32

    public init() {
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(holder, $0, length) == 0 && getsockname(holder, $0, &length) == 0
            }
        }
        precondition(bound, "cannot bind a socket on 127.0.0.1: errno \(errno)")
        self.holder = holder
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(holder) }
}
