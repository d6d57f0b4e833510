import CNGHTTP2
import PitlaneCore

/// One RPC on a server connection: request headers as they arrive, then the bridges between
/// the event loop and the handler's task. Everything but `outbound` is loop-confined.
final class ServerStream {
    enum Phase {
        /// Collecting request headers.
        case headers
        /// The handler runs; `responseHeadersSent` once HEADERS went out.
        case open(responseHeadersSent: Bool)
        /// Trailers (or a trailers-only response) are submitted.
        case closing
    }

    let id: Int32
    var phase = Phase.headers
    var requestHeaders: [(name: String, value: String)] = []
    /// The request's header list passed the server's limit: it is answered, not served.
    var headerListTooLarge: Int?
    var deframer: MessageDeframer
    /// Request parts for the handler; nil until the request headers are accepted.
    var inbound: BufferedStream<RPCRequestPart>?
    let outbound: StreamOutbound
    let cancellation = RPCCancellationHandle()
    /// Framed response messages waiting for nghttp2 to ask for DATA.
    var pendingData = PendingData()
    /// Trailers to send once `pendingData` is drained.
    var pendingTrailers: [(name: String, value: String)]?
    /// Whether nghttp2 is parked on NGHTTP2_ERR_DEFERRED for this stream.
    var dataDeferred = false
    /// Window accounting for received DATA.
    var window = InboundWindow()
    /// The timer that expires the RPC at its `grpc-timeout`, disarmed when the stream ends.
    var deadlineTimer: EventLoop.TimerID?
    /// The request's `grpc-encoding`, nil for identity.
    var requestCompression: CompressionAlgorithm?

    init(id: Int32, maxMessageBytes: Int, outboundHighWatermark: Int) {
        self.id = id
        deframer = MessageDeframer(maxMessageBytes: maxMessageBytes)
        outbound = StreamOutbound(highWatermark: outboundHighWatermark)
    }

    /// The first value of a request header.
    func header(_ name: String) -> String? {
        requestHeaders.first { $0.name == name }?.value
    }
}
