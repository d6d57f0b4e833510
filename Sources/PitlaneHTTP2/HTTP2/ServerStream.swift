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
    /// The request's head as its header fields arrive: pseudo-headers in their places
    /// (`:authority` as `host`), the rest in order.
    var requestHead = HTTPRequestHead(method: "", path: "", headers: [])
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

    /// Takes one request header field into `requestHead`.
    func receivedHeader(name: String, value: String) {
        // Room for a gRPC request's usual headers at once, rather than growing 1, 2, 4, 8.
        if requestHead.headers.capacity == 0 { requestHead.headers.reserveCapacity(8) }
        switch name {
        case ":method": requestHead.method = value
        case ":path": requestHead.path = value
        case ":authority": requestHead.headers.append(("host", value))
        case ":scheme": break
        default: requestHead.headers.append((name, value))
        }
    }
}

extension ServerStream {
    /// The stream as its response writer holds it, so that the connection finds it without
    /// a lookup. Sendable because the writer only hands it back to the connection's loop,
    /// where the stream is touched.
    struct Handle: ServerStreamHandle, @unchecked Sendable {
        let stream: ServerStream
        var outbound: StreamOutbound { stream.outbound }
    }
}
