import PitlaneCore

/// The seam through which another module serves more than gRPC over HTTP/2 on a server
/// transport's port (PitlaneWeb: HTTP/1.1, gRPC-Web, Connect, CORS, static files, HTTP
/// endpoints, WebSocket). The transport asks it twice:
/// - by a connection's first bytes or its ALPN: a connection that speaks HTTP/1.1 is its
///   to serve (``http1Connection(_:)``), when it ``servesHTTP1``;
/// - by a request's method and content type: an HTTP/2 request that is not gRPC is its to
///   start (``start(_:limits:)``).
///
/// Neither the HTTP/2 connection nor the call code asks which protocol a call speaks: a call
/// carries its ``ServerWire``.
package protocol ServerProtocolHandler: Sendable {
    /// Whether HTTP/1.1 connections are served: TLS's ALPN may settle on "http/1.1", and a
    /// plaintext connection that does not begin with HTTP/2's preface is handed over.
    var servesHTTP1: Bool { get }

    /// An HTTP/2 request that is not gRPC: a call to serve, one to reject, or a plain
    /// HTTP answer.
    func start(_ head: HTTPRequestHead, limits: ServerCallLimits) -> ServerCall.Start

    /// The connection that serves `accepted`, which speaks HTTP/1.1.
    func http1Connection(_ accepted: AcceptedConnection) -> any ServingConnection
}

/// A connection whose protocol is settled, with what its server offers it.
package struct AcceptedConnection {
    package let socket: Socket
    package let loop: EventLoop
    /// The client's address, for logs and `ServerContext.peer`.
    package let peer: String
    /// The connection's TLS state (its handshake complete), nil for plaintext.
    package let tls: TLSEngine?
    package let config: HTTP2ServerTransport.Config
    /// Hands an RPC to the server.
    package let accept: RPCAcceptor
    /// Tells the transport the connection has closed.
    package let onClose: @Sendable (any ServerConnection) -> Void
    /// Puts a connection in another's place among the transport's (an upgrade to WebSocket).
    package let replace: (_ old: any ServerConnection, _ new: any ServerConnection) -> Void
    /// Runs work as one of the server's tasks, on `loop` when handlers run on event loops
    /// (a WebSocket's handler); false once the server takes no more work.
    package let run: @Sendable (_ loop: EventLoop, _ work: @escaping @Sendable () async -> Void) -> Bool
}

/// Hands a new RPC to the server; false when the server takes no more.
package typealias RPCAcceptor = @Sendable (ServerRPCStream, ServerTransportContext, RPCCancellationHandle) -> Bool
