import PitlaneCore

/// One RPC on a server connection: its state machine (the request's head as it arrives,
/// then the response's progress and queued DATA), and the bridges between the event loop
/// and the handler's task. Everything but `outbound` is loop-confined.
final class ServerStream {
    let id: Int32
    var machine = ServerStreamStateMachine()
    /// The RPC as its wire protocol sees it; nil until the request headers are accepted.
    var call: ServerCall?
    /// Request parts for the handler; nil until the request headers are accepted.
    var inbound: BufferedStream<RPCRequestPart>?
    let outbound: StreamOutbound
    let cancellation = RPCCancellationHandle()
    /// Window accounting for received DATA.
    var window = InboundWindow()
    /// The timer that expires the RPC at its `grpc-timeout`, disarmed when the stream ends.
    var deadlineTimer: EventLoop.TimerID?

    init(id: Int32, outboundHighWatermark: Int) {
        self.id = id
        outbound = StreamOutbound(highWatermark: outboundHighWatermark)
    }
}

extension ServerStream {
    /// The stream as its response writer holds it, so that the connection finds it without
    /// a lookup. Half the size of a ``LoopBound`` of both, which keeps the writer inline in
    /// its `RPCWriter.Closable` (no box per RPC).
    ///
    /// `@unchecked Sendable`: off the loop the writer reads only `let`s through it (the
    /// stream's `outbound`, the connection's `loop`), and hands the rest back to the loop.
    struct Handle: ServerStreamHandle, @unchecked Sendable {
        let stream: ServerStream
        let connection: HTTP2ServerConnection
        var outbound: StreamOutbound { stream.outbound }
        var loop: EventLoop { connection.loop }
    }
}
