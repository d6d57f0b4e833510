/// Moves bytes between a socket and an nghttp2 session, for client and server connections
/// alike: reads until the socket would block, writes until nghttp2 has nothing more or the
/// socket is full (keeping what it did not take), and says when to wait for writability.
///
/// With TLS the bytes pass through a ``TLSEngine`` on the way: the handshake runs first
/// (nothing of the session moves until it completes), records are decrypted as they arrive,
/// and the session's output is encrypted into the engine's bounded buffer and written from
/// there.
final class SessionPump {
    /// What reading found.
    enum ReadOutcome {
        /// The socket has nothing more for now; `received` bytes went to the session.
        case drained(received: Int)
        /// TLS: the handshake is done and "h2" agreed. Read again: plaintext may be buffered.
        case handshakeCompleted
        /// The peer closed the connection (with TLS: close_notify, or the socket's end).
        case endOfStream
        /// The socket failed, TLS failed (a ``TLSError``), or the peer broke the protocol
        /// (nghttp2 then queued a GOAWAY).
        case failed(any Error)
    }

    /// nil for plaintext.
    private let tls: TLSEngine?
    /// Plaintext: output nghttp2 produced, gathered for one write, or that the socket did not
    /// take yet. TLS: output gathered for the next record, or that the engine had no room for
    /// yet. From `backlogStart` on.
    private var backlog: [UInt8] = []
    private var backlogStart = 0
    /// Whether the loop is asked for writability.
    private var wantsWritable = false
    /// TLS: reading stopped because the engine's output buffer was full (OpenSSL had an
    /// answer to write); cleared, setting `readingMayResume`, once the buffer is written out.
    private var readingWaitsForWrite = false
    /// Set by `write` when reading that waited may go on; see `takeResumeReading()`.
    private var readingMayResume = false

    init(tls: TLSEngine? = nil) {
        self.tls = tls
    }

    private var hasBacklog: Bool { backlogStart < backlog.count }

    /// Whether the bytes pass through TLS.
    var isSecure: Bool { tls != nil }

    /// Whether bytes wait to be written: session output, or (TLS) ciphertext.
    var hasUnsentBytes: Bool { hasBacklog || tls?.hasPendingCiphertext == true }

    /// Whether a TLS handshake is still running.
    var isHandshaking: Bool { tls?.state == .handshaking }

    /// True once after a write freed room that a stalled TLS read waited for: the caller
    /// should read again, since the bytes waiting are inside the engine, not the socket, and
    /// the loop will not report them.
    func takeResumeReading() -> Bool {
        defer { readingMayResume = false }
        return readingMayResume
    }

    // MARK: Reading

    /// Reads through `buffer`, the loop's: plaintext, what one socket read takes; TLS, what
    /// one record decrypts to (the ciphertext has a buffer of its own in the engine).
    func read(from socket: Socket, into session: NGHTTP2Session, through buffer: UnsafeMutableRawBufferPointer) -> ReadOutcome {
        guard let tls else { return readPlaintext(from: socket, into: session, through: buffer) }
        // One record's plaintext at most per read, so a record never waits half read inside OpenSSL.
        let record = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Swift.min(buffer.count, 16_384)])
        readingWaitsForWrite = false
        var received = 0
        do {
            while true {
                // First what the engine holds, then more from the socket.
                switch tls.state {
                case .handshaking:
                    switch tls.advanceHandshake() {
                    case .completed: return .handshakeCompleted
                    case .needsCiphertext: break
                    case .needsFlush:
                        readingWaitsForWrite = true
                        return .drained(received: received)
                    case .failed(let error): return .failed(error)
                    }
                case .established:
                    decrypting: while true {
                        switch tls.readPlaintext(into: record) {
                        case .bytes(let count):
                            received += count
                            try session.receive(UnsafeRawBufferPointer(rebasing: record[0..<count]))
                        case .needsCiphertext: break decrypting
                        case .needsFlush:
                            readingWaitsForWrite = true
                            return .drained(received: received)
                        case .closedByPeer: return .endOfStream
                        case .failed(let error): return .failed(error)
                        }
                    }
                case .closed: return .endOfStream
                case .failed: return .failed(TLSError.connectionFailed(reason: "the connection failed earlier"))
                }
                switch try tls.readCiphertext(from: socket) {
                case .received: continue
                case .wouldBlock: return .drained(received: received)
                case .endOfStream: return .endOfStream
                case .bufferFull: return .failed(TLSError.connectionFailed(reason: "a record larger than the TLS buffer"))
                }
            }
        } catch {
            return .failed(error)
        }
    }

    private func readPlaintext(
        from socket: Socket, into session: NGHTTP2Session,
        through buffer: UnsafeMutableRawBufferPointer
    ) -> ReadOutcome {
        var received = 0
        while true {
            do {
                guard let count = try socket.read(into: buffer) else {
                    return .drained(received: received)
                }
                guard count > 0 else { return .endOfStream }
                received += count
                try session.receive(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                // A short read emptied the socket: the loop's epoll is level-triggered, so
                // bytes that arrive later are reported again, and the read that would only
                // say EAGAIN (a system call per request) is skipped.
                if count < buffer.count { return .drained(received: received) }
            } catch {
                return .failed(error)
            }
        }
    }

    // MARK: Writing

    /// Writes pending output; asks `loop` for writability exactly while bytes remain unsent.
    func write(from session: NGHTTP2Session, to socket: Socket, loop: EventLoop) throws {
        let socketFull: Bool
        if let tls {
            socketFull = try writeEncrypted(from: session, through: tls, to: socket)
            if readingWaitsForWrite && !socketFull {
                readingWaitsForWrite = false
                readingMayResume = true
            }
        } else {
            socketFull = try writePlaintext(from: session, to: socket)
        }
        if socketFull != wantsWritable {
            wantsWritable = socketFull
            try loop.setInterest(socket.fileDescriptor, readable: true, writable: socketFull)
        }
    }

    /// Gathers the session's output in the backlog, up to `gatherBytes` and a frame, and
    /// writes each gathering in one system call, until the session has nothing more or the
    /// socket is full. nghttp2 hands out one frame at a time: a unary response's HEADERS, DATA
    /// and trailers written as they came were three sends, each the whole TCP path on loopback
    /// (`strace -c`: three `sendmsg` per call against gRPC C++'s one).
    /// Returns whether bytes remain for the socket.
    private func writePlaintext(from session: NGHTTP2Session, to socket: Socket) throws -> Bool {
        while true {
            if !hasBacklog {
                while backlog.count < Self.gatherBytes, let output = try session.nextOutput() {
                    backlog.append(contentsOf: output)
                }
                guard hasBacklog else { return false }
            }
            let start = backlogStart
            backlogStart += try backlog.withUnsafeBytes { try socket.write([UnsafeRawBufferPointer(rebasing: $0[start...])]) } ?? 0
            dropBacklogIfSent()
            if hasBacklog { return true }
        }
    }

    /// Plaintext output gathered for one write: a socket buffer's worth of frames.
    private static let gatherBytes = 65_536

    /// Fills the engine's buffer with encrypted session output, writes it out, and again,
    /// until the session has nothing more or the socket is full. Before the handshake
    /// completes only handshake records (and after a failure only the alert) go out.
    /// Returns whether bytes remain for the socket.
    ///
    /// Session output is gathered in the backlog to a record's worth before it is encrypted:
    /// nghttp2 hands out DATA frames of 16,384 + 9 bytes, which taken one by one would each
    /// make a full record and a 9-byte one.
    private func writeEncrypted(from session: NGHTTP2Session, through tls: TLSEngine, to socket: Socket) throws -> Bool {
        guard try tls.writeCiphertext(to: socket) else { return true }
        guard tls.state == .established else { return false }
        while true {
            var sessionIdle = false
            filling: while true {
                if backlog.count - backlogStart < Self.recordBytes {
                    compactBacklog()
                    while backlog.count < Self.recordBytes, let output = try session.nextOutput() {
                        backlog.append(contentsOf: output)
                    }
                }
                guard hasBacklog else {
                    sessionIdle = true
                    break filling
                }
                let start = backlogStart
                let taken = try backlog.withUnsafeBytes { try tls.writePlaintext(UnsafeRawBufferPointer(rebasing: $0[start...])) }
                guard taken > 0 else {
                    try Self.requireRoom(tls)
                    break filling  // the engine's buffer is full: write it out
                }
                backlogStart += taken
                dropBacklogIfSent()
            }
            guard try tls.writeCiphertext(to: socket) else { return true }
            if sessionIdle { return false }
        }
    }

    /// The most plaintext one TLS record carries.
    private static let recordBytes = 16_384

    /// Moves the unsent part of the backlog to its front, so gathering more cannot grow it
    /// past a record and a frame.
    private func compactBacklog() {
        guard backlogStart > 0 else { return }
        backlog.removeSubrange(0..<backlogStart)
        backlogStart = 0
    }

    /// An engine that takes nothing while its buffer is empty would make writing spin.
    private static func requireRoom(_ tls: TLSEngine) throws {
        if !tls.hasPendingCiphertext {
            throw TLSError.connectionFailed(reason: "the TLS engine takes no data with an empty buffer")
        }
    }

    private func dropBacklogIfSent() {
        // Advance an offset rather than shifting the array: a large backlog drains in O(n).
        guard backlogStart == backlog.count else { return }
        backlog.removeAll(keepingCapacity: backlog.capacity <= 1 << 20)
        backlogStart = 0
    }

    // MARK: Closing

    /// TLS: queues close_notify and writes it as far as the socket takes it now; nothing
    /// for plaintext, or when the handshake did not complete.
    func sendCloseNotify(to socket: Socket) {
        guard let tls, tls.state == .established || tls.state == .closed else { return }
        tls.shutdown()
        _ = try? tls.writeCiphertext(to: socket)
    }
}
