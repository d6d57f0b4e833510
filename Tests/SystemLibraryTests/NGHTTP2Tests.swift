import CNGHTTP2
import Testing

@Suite("libnghttp2 through CNGHTTP2", .timeLimit(.minutes(5)))
struct NGHTTP2Tests {
    /// Collects what the session writes, reached through nghttp2's `user_data` pointer.
    final class Sink {
        var bytes: [UInt8] = []
    }

    @Test("a server session sends a SETTINGS frame with the values submitted")
    func serverSessionPacksSettings() throws {
        var callbacks: OpaquePointer?
        #expect(nghttp2_session_callbacks_new(&callbacks) == 0)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_send_callback(callbacks) { _, data, length, _, userData in
            let sink = Unmanaged<Sink>.fromOpaque(userData!).takeUnretainedValue()
            sink.bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            return length
        }

        let sink = Sink()
        var session: OpaquePointer?
        #expect(nghttp2_session_server_new(&session, callbacks, Unmanaged.passUnretained(sink).toOpaque()) == 0)
        defer { nghttp2_session_del(session) }

        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: 100),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 65_535),
        ]
        #expect(nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count) == 0)
        #expect(nghttp2_session_send(session) == 0)

        // Frame header: 24-bit length, type 0x4 (SETTINGS), flags 0, stream 0; then 6 bytes per entry.
        let frame = sink.bytes
        try #require(frame.count == 9 + 12)
        #expect(Array(frame[0..<9]) == [0, 0, 12, 0x4, 0, 0, 0, 0, 0])
        #expect(Array(frame[9..<15]) == [0, 3, 0, 0, 0, 100])
        #expect(Array(frame[15..<21]) == [0, 4, 0, 0, 0xFF, 0xFF])

        // The same payload through the stateless packer.
        var payload = [UInt8](repeating: 0, count: 12)
        #expect(nghttp2_pack_settings_payload(&payload, payload.count, &settings, settings.count) == 12)
        #expect(payload == Array(frame[9...]))
    }
}
