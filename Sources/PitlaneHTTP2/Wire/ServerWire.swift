import PitlaneCore

/// How one call's wire protocol carries a response over HTTP: the head's protocol headers,
/// and how the call ends. gRPC's is this module's (``GRPCServerWire``); PitlaneWeb plugs in
/// gRPC-Web's and Connect's through ``ServerProtocolHandler``. A value per call, kept by its
/// ``ServerCall``; the connection never asks which protocol it is.
package protocol ServerWire: Sendable {
    /// Whether the response head waits for the handler's status, because the status decides
    /// the HTTP status (Connect's unary calls). The head's metadata and the one response
    /// message are then held until ``responseEnd(_:trailers:progress:compression:_:)``.
    var holdsHeadUntilEnd: Bool { get }

    /// Whether a request header (`name`, in lowercase) is the protocol's own, not the
    /// application's metadata. HTTP's own (`accept-encoding`, `upgrade`, ...) are told apart
    /// by the call already.
    func isProtocolHeader(_ name: String) -> Bool

    /// The head of a response that has not failed (so far): HTTP status 200, the content type
    /// and protocol headers first, then `metadata`, then `extra`.
    func responseHead(metadata: Metadata, extra: [(name: String, value: String)], compression: CompressionAlgorithm?) -> HTTPResponseHead

    /// The response's end (`status` and `trailers`) as actions, given what was sent before.
    func responseEnd(
        _ status: Status, trailers: Metadata, progress: ResponseProgress, compression: CompressionAlgorithm?,
        _ perform: (ResponseAction) -> Void
    )
}

/// How far a response has come before its end.
package enum ResponseProgress {
    /// Nothing sent yet.
    case awaitingHead
    /// The head is sent; messages may have followed.
    case headSent
    /// A wire that holds its head until the end (``ServerWire/holdsHeadUntilEnd``): the
    /// handler's metadata and its message, if one came.
    case held(Metadata, message: BodyBytes?)
}
