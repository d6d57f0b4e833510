/// A transport's count of one RPC's message bytes as they crossed the wire: the sum of the
/// messages' gRPC length prefixes, so after compression, before decompression (what gRFC A66's
/// `…compressed_message_size` instruments count). A transport that frames messages hands one
/// over in ``RPCStream/wireCounts``; metrics read it once, when the RPC or attempt ends.
///
/// A transport keeps the counts in an object it already has for each stream (so counting
/// allocates nothing) and updates them as it frames and unframes messages anyway (so counting
/// costs a plain load and store per message, whether anyone reads them or not).
public protocol MessageWireCounts: AnyObject, Sendable {
    /// Bytes of the messages sent so far, as framed: compressed when they were compressed.
    var sentMessageWireBytes: Int { get }
    /// Bytes of the messages received so far, as they arrived: compressed when they came so.
    var receivedMessageWireBytes: Int { get }
}
