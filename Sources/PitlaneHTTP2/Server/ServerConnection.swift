/// What every accepted connection is to its transport, whichever protocol it speaks (and
/// before that is known: a ``ProtocolSniffer``, a ``TLSHandshaker``).
package protocol ServerConnection: AnyObject {
    var loop: EventLoop { get }
    /// Registers with the loop and begins; on the loop.
    func start() throws
    /// Finishes what is in progress, accepting nothing new, then closes; on the loop.
    func drain()
    /// Closes at once; on the loop.
    func close()
}

/// A connection that serves requests once its protocol is settled: HTTP/2 here, HTTP/1.1 in
/// PitlaneWeb.
package protocol ServingConnection: ServerConnection, FileDescriptorHandler {
    /// ``ServerConnection/start()``, then the bytes read while the protocol was told apart.
    func start(receivedAlready bytes: [UInt8]) throws
}

extension HTTP2ServerConnection: ServingConnection {}
extension TLSHandshaker: ServerConnection {}
