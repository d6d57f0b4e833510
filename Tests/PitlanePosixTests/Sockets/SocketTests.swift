import Glibc
import PitlanePosix
import TestSupport
import Testing

@Suite("Socket", .timeLimit(.minutes(1)))
struct SocketTests {
    /// 1 MiB that is not periodic in any buffer size.
    static let payload: [UInt8] = {
        var generator = SplitMix64(seed: 0x5049_544c_414e_45)
        return (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }()

    @Test("1 MiB round trip over TCP between two event loops")
    func echoOverTCP() async throws {
        let group = try EventLoopGroup(threads: 2, name: "echo-tcp")
        defer { group.shutdownGracefully() }
        let server = try await EchoServer.start(on: group.loops[0], at: .ipv4("127.0.0.1", port: 0))
        #expect(server.ipAddress == "127.0.0.1")
        #expect(server.port != 0)

        let echoed = try await EchoClient.roundTrip(Self.payload, to: server, on: group.loops[1])
        #expect(echoed.count == Self.payload.count)
        #expect(echoed == Self.payload)
    }

    @Test("1 MiB round trip over a Unix socket between two event loops")
    func echoOverUnixSocket() async throws {
        try await withTemporaryDirectory { directory in
            let group = try EventLoopGroup(threads: 2, name: "echo-unix")
            defer { group.shutdownGracefully() }
            let address = try SocketAddress.unixDomainSocket(path: "\(directory)/echo.sock")
            let server = try await EchoServer.start(on: group.loops[0], at: address)
            #expect(server == address)

            let echoed = try await EchoClient.roundTrip(Self.payload, to: server, on: group.loops[1])
            #expect(echoed.count == Self.payload.count)
            #expect(echoed == Self.payload)
        }
    }

    @Test("connecting to a closed port fails with ECONNREFUSED")
    func connectionRefused() async throws {
        let loop = try EventLoop.start(name: "refused")
        defer { loop.shutdownGracefully() }
        let refusing = RefusingPort()
        let closed = try SocketAddress.ipv4("127.0.0.1", port: refusing.port)

        let error = await #expect(throws: SocketError.self) {
            _ = try await EchoClient.roundTrip([1, 2, 3], to: closed, on: loop)
        }
        #expect(error?.errno == ECONNREFUSED)
        #expect(error?.call == "connect")
        #expect(error?.address == closed)
    }

    @Test("reads and writes never block: nil when nothing moves, 0 at end of stream")
    func nonBlockingSemantics() async throws {
        try await withTemporaryDirectory { directory in
            let address = try SocketAddress.unixDomainSocket(path: "\(directory)/io.sock")
            let listener = try Socket.listen(on: address)
            #expect(try listener.accept() == nil)

            let client = try Socket(for: address)
            // A Unix connect completes at once, queueing the connection on the listener.
            #expect(try client.connect(to: address) == .connected)
            let server = try #require(try listener.accept())
            #expect(try server.localAddress == address)
            #expect(try client.peerAddress == address)

            var buffer = [UInt8](repeating: 0, count: 4096)
            #expect(try buffer.withUnsafeMutableBytes { try server.read(into: $0) } == nil)

            // Fill the socket until it takes nothing more, gathering from two buffers.
            var sent = 0
            let head: [UInt8] = [1, 2, 3]
            let tail = [UInt8](repeating: 7, count: 65_536)
            while let written = try head.withUnsafeBytes({ head in
                try tail.withUnsafeBytes { tail in try client.write([head, tail]) }
            }) {
                sent += written
            }
            #expect(sent > 0)
            try client.shutdownWrite()

            var received: [UInt8] = []
            while true {
                let count = try #require(try buffer.withUnsafeMutableBytes { try server.read(into: $0) })
                if count == 0 { break }
                received += buffer[..<count]
            }
            #expect(received.count == sent)
            #expect(received.starts(with: [1, 2, 3, 7, 7]))

            client.close()
            #expect(!client.isOpen)
            client.close()
        }
    }
}
