import CWslay

/// What a ``WSLayContext``'s callbacks ask of the connection that owns it.
protocol WSLayContextDelegate: AnyObject {
    /// Fills `buffer` with bytes from the client.
    func wslayRead(into buffer: UnsafeMutableRawBufferPointer) -> WSLayContext.Transfer
    /// Writes what it can of `bytes` to the client.
    func wslayWrite(_ bytes: UnsafeRawBufferPointer) -> WSLayContext.Transfer
    /// A frame began: the client is alive. Its header is here to check what wslay lets pass.
    func wslayFrameStarted(final: Bool, opcode: UInt8, payloadLength: UInt64)
    /// A whole message (fragments joined) or a control frame arrived; `closeCode` for close
    /// frames (1005 when the frame had none).
    func wslayReceived(opcode: UInt8, payload: UnsafeRawBufferPointer, closeCode: UInt16)
}

/// One wslay server context: frames in and out, masking, fragments, ping answers and the
/// close handshake. Owns its pointer; every call happens on the owning connection's loop.
final class WSLayContext {
    enum Transfer {
        case bytes(Int)
        case wouldBlock
        case failed
    }

    static let text = UInt8(WSLAY_TEXT_FRAME.rawValue)
    static let binary = UInt8(WSLAY_BINARY_FRAME.rawValue)
    static let close = UInt8(WSLAY_CONNECTION_CLOSE.rawValue)
    static let ping = UInt8(WSLAY_PING.rawValue)
    static let pong = UInt8(WSLAY_PONG.rawValue)

    weak var delegate: (any WSLayContextDelegate)?
    private var context: wslay_event_context_ptr?

    init(maxMessageBytes: Int) {
        var callbacks = wslay_event_callbacks(
            recv_callback: { context, buffer, length, _, user in
                let owner = WSLayContext.owner(user)
                let outcome = owner.delegate?.wslayRead(into: UnsafeMutableRawBufferPointer(start: buffer, count: length)) ?? .failed
                return owner.report(outcome, context)
            },
            send_callback: { context, data, length, _, user in
                let owner = WSLayContext.owner(user)
                let outcome = owner.delegate?.wslayWrite(UnsafeRawBufferPointer(start: data, count: length)) ?? .failed
                return owner.report(outcome, context)
            },
            genmask_callback: nil,
            on_frame_recv_start_callback: { _, argument, user in
                guard let frame = argument?.pointee else { return }
                WSLayContext.owner(user).delegate?.wslayFrameStarted(
                    final: frame.fin != 0, opcode: frame.opcode, payloadLength: frame.payload_length)
            },
            on_frame_recv_chunk_callback: nil,
            on_frame_recv_end_callback: nil,
            on_msg_recv_callback: { _, argument, user in
                guard let message = argument?.pointee else { return }
                WSLayContext.owner(user).delegate?.wslayReceived(
                    opcode: message.opcode, payload: UnsafeRawBufferPointer(start: message.msg, count: message.msg_length),
                    closeCode: message.status_code)
            }
        )
        wslay_event_context_server_init(&context, &callbacks, Unmanaged.passUnretained(self).toOpaque())
        wslay_event_config_set_max_recv_msg_length(context, UInt64(maxMessageBytes))
    }

    deinit {
        wslay_event_context_free(context)
    }

    private static func owner(_ user: UnsafeMutableRawPointer?) -> WSLayContext {
        Unmanaged<WSLayContext>.fromOpaque(user!).takeUnretainedValue()
    }

    private func report(_ outcome: Transfer, _ context: wslay_event_context_ptr?) -> Int {
        switch outcome {
        case .bytes(let count) where count > 0:
            return count
        case .bytes, .wouldBlock:
            wslay_event_set_error(context, Int32(WSLAY_ERR_WOULDBLOCK.rawValue))
            return -1
        case .failed:
            wslay_event_set_error(context, Int32(WSLAY_ERR_CALLBACK_FAILURE.rawValue))
            return -1
        }
    }

    /// Reads and handles frames until the client has no more for now; false on a failure
    /// that ends the connection.
    func receive() -> Bool { wslay_event_recv(context) == 0 }

    /// Writes queued frames until the socket is full; false on a failure.
    func send() -> Bool { wslay_event_send(context) == 0 }

    /// Queues a message (copied); false once a close frame is queued or sent.
    func queue(opcode: UInt8, _ payload: UnsafeRawBufferPointer) -> Bool {
        var message = wslay_event_msg(
            opcode: opcode, msg: payload.baseAddress?.assumingMemoryBound(to: UInt8.self),
            msg_length: payload.count)
        return wslay_event_queue_msg(context, &message) == 0
    }

    /// Queues a close frame and stops reading messages; false if one is queued already.
    func queueClose(_ code: UInt16, reason: String) -> Bool {
        var reason = Array(reason.utf8.prefix(123))
        return wslay_event_queue_close(context, code, &reason, reason.count) == 0
    }

    /// Stops handing received messages to the delegate (after a close it sent).
    func stopReading() { wslay_event_shutdown_read(context) }

    var wantsRead: Bool { wslay_event_want_read(context) != 0 }
    var wantsWrite: Bool { wslay_event_want_write(context) != 0 }
    /// Payload bytes queued and not yet sent.
    var queuedBytes: Int { wslay_event_get_queued_msg_length(context) }
    /// Whether a close frame came from the client.
    var closeReceived: Bool { wslay_event_get_close_received(context) != 0 }
    /// Whether this side's close frame is sent.
    var closeSent: Bool { wslay_event_get_close_sent(context) != 0 }
}
