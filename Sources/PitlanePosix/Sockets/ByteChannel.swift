/// A connection's bytes after the HTTP version is settled: straight to and from the socket,
/// or through its TLS engine (whose handshake is complete). Used by the connections that
/// do not go through nghttp2: HTTP/1.1 and WebSocket.
package struct ByteChannel {
    package let socket: Socket
    /// nil for plaintext.
    package let tls: TLSEngine?

    package init(socket: Socket, tls: TLSEngine?) {
        self.socket = socket
        self.tls = tls
    }

    package enum ReadOutcome {
        case bytes(Int)
        case wouldBlock
        case end
        case failed
    }

    /// The largest read that keeps a TLS record from waiting half read inside OpenSSL.
    package func readBuffer(_ loopBuffer: UnsafeMutableRawBufferPointer) -> UnsafeMutableRawBufferPointer {
        tls == nil ? loopBuffer : UnsafeMutableRawBufferPointer(rebasing: loopBuffer.prefix(16_384))
    }

    /// Plaintext from the socket, or through the TLS engine. `flush` runs when OpenSSL has
    /// an answer to write first; the read then reports `wouldBlock`, and reading goes on
    /// when the socket is writable.
    package func read(into buffer: UnsafeMutableRawBufferPointer, flush: () -> Void) -> ReadOutcome {
        do {
            guard let tls else {
                guard let count = try socket.read(into: buffer) else { return .wouldBlock }
                return count > 0 ? .bytes(count) : .end
            }
            while true {
                switch tls.readPlaintext(into: buffer) {
                case .bytes(let count): return .bytes(count)
                case .needsCiphertext:
                    switch try tls.readCiphertext(from: socket) {
                    case .received: continue
                    case .wouldBlock: return .wouldBlock
                    case .endOfStream: return .end
                    case .bufferFull: return .failed
                    }
                case .needsFlush:
                    flush()
                    return .wouldBlock
                case .closedByPeer: return .end
                case .failed: return .failed
                }
            }
        } catch {
            return .failed
        }
    }

    /// Writes what it can of `bytes`; returns how many it took (0 when full).
    package func write(_ bytes: UnsafeRawBufferPointer) throws -> Int {
        guard let tls else { return try socket.write(bytes) ?? 0 }
        guard try tls.writeCiphertext(to: socket) else { return 0 }
        let taken = try tls.writePlaintext(bytes)
        _ = try tls.writeCiphertext(to: socket)
        return taken
    }

    /// TLS: writes the ciphertext still pending; true when none is left.
    package func finishWriting() throws -> Bool {
        guard let tls else { return true }
        return try tls.writeCiphertext(to: socket)
    }

    /// Stops writing: TLS close_notify, then the socket's write side.
    package func shutdownWrite() {
        if let tls {
            tls.shutdown()
            _ = try? tls.writeCiphertext(to: socket)
        }
        try? socket.shutdownWrite()
    }
}
