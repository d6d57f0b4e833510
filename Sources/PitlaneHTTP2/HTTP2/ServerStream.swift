import CNGHTTP2
import PitlaneCore

/// One RPC on a server connection: request headers as they arrive, then the bridges between
/// the event loop and the handler's task. Everything but `outbound` is loop-confined.
final class ServerStream {
    enum Phase {
        /// Collecting request headers.
        case headers
        /// The handler runs.
        case open
        /// The response's end is queued (or it was reset).
        case closing
    }

    let id: Int32
    var phase = Phase.headers
    var requestHeaders: [(name: String, value: String)] = []
    /// The request's header list passed the server's limit: it is answered, not served.
    var headerListTooLarge: Int?
    /// The RPC as its protocol (gRPC, gRPC-Web, Connect) sees it; nil until the request
    /// headers are accepted.
    var call: ServerCall?
    /// Request parts for the handler; nil until the request headers are accepted.
    var inbound: BufferedStream<RPCRequestPart>?
    let outbound: StreamOutbound
    let cancellation = RPCCancellationHandle()
    /// Framed response messages waiting for nghttp2 to ask for DATA.
    var pendingData = PendingData()
    /// How the response ends once `pendingData` is drained: trailers, or END_STREAM on
    /// the last DATA frame; nil while more may come.
    var pendingEnd: [(name: String, value: String)]?
    /// Whether nghttp2 is parked on NGHTTP2_ERR_DEFERRED for this stream.
    var dataDeferred = false
    /// Window accounting for received DATA.
    var window = InboundWindow()
    /// The timer that expires the RPC at its `grpc-timeout`, disarmed when the stream ends.
    var deadlineTimer: EventLoop.TimerID?

    init(id: Int32, outboundHighWatermark: Int) {
        self.id = id
        outbound = StreamOutbound(highWatermark: outboundHighWatermark)
    }

    /// The request's head: pseudo-headers apart, the rest as received.
    var requestHead: HTTPRequestHead {
        var head = HTTPRequestHead(method: "", path: "", headers: [])
        head.headers.reserveCapacity(requestHeaders.count)
        for header in requestHeaders {
            switch header.name {
            case ":method": head.method = header.value
            case ":path": head.path = header.value
            case ":authority": head.headers.append(("host", header.value))
            case ":scheme": continue
            default: head.headers.append(header)
            }
        }
        return head
    }
}
