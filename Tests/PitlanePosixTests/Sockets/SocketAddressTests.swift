import PitlanePosix
import Testing

@Suite("SocketAddress", .timeLimit(.minutes(1)))
struct SocketAddressTests {
    @Test(
        "parsing and formatting round-trip",
        arguments: [
            ("ipv4:127.0.0.1:50051", "ipv4:127.0.0.1:50051", "127.0.0.1:50051"),
            ("127.0.0.1:50051", "ipv4:127.0.0.1:50051", "127.0.0.1:50051"),
            ("0.0.0.0:0", "ipv4:0.0.0.0:0", "0.0.0.0:0"),
            ("[::1]:50051", "ipv6:[::1]:50051", "[::1]:50051"),
            ("ipv6:[0:0:0:0:0:0:0:1]:443", "ipv6:[::1]:443", "[::1]:443"),
            (
                "[2001:db8::8:800:200c:417a]:65535", "ipv6:[2001:db8::8:800:200c:417a]:65535",
                "[2001:db8::8:800:200c:417a]:65535"
            ),
            ("[fe80::1%1]:80", "ipv6:[fe80::1%1]:80", "[fe80::1%1]:80"),
            ("[fe80::1%lo]:80", "ipv6:[fe80::1%1]:80", "[fe80::1%1]:80"),
            ("unix:/tmp/pitlane.sock", "unix:/tmp/pitlane.sock", "unix:/tmp/pitlane.sock"),
            ("unix:///tmp/pitlane.sock", "unix:/tmp/pitlane.sock", "unix:/tmp/pitlane.sock"),
            ("unix:relative.sock", "unix:relative.sock", "unix:relative.sock"),
        ]
    )
    func roundTrip(input: String, description: String, plain: String) throws {
        let address = try SocketAddress(parsing: input)
        #expect(address.description == description)
        #expect(address.plainDescription == plain)
        #expect(try SocketAddress(parsing: address.description) == address)
        #expect(try SocketAddress(parsing: address.plainDescription) == address)
    }

    @Test(
        "rejects what is not an address",
        arguments: [
            "", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:8o", "256.0.0.1:80",
            "localhost:80", "::1:80", "[::1]", "[::1]80", "[::1:80", "ipv6:::1:80", "ipv4:[::1]:80",
            "ipv6:127.0.0.1:80", "[fe80::1%nosuchinterface0]:80", "unix:", "unix://relative",
            "unix:/" + String(repeating: "x", count: 200),
        ]
    )
    func rejects(input: String) {
        #expect(throws: SocketAddressError.self) { try SocketAddress(parsing: input) }
    }

    @Test("exposes its parts")
    func parts() throws {
        let v4 = try SocketAddress.ipv4("10.1.2.3", port: 80)
        #expect(v4.ipAddress == "10.1.2.3")
        #expect(v4.port == 80)
        #expect(v4.path == nil)
        #expect(!v4.isLoopback)
        #expect(try SocketAddress.ipv4("127.9.9.9", port: 1).isLoopback)

        let v6 = try SocketAddress.ipv6("::1", port: 443)
        #expect(v6.ipAddress == "::1")
        #expect(v6.isLoopback)
        #expect(try SocketAddress.ipv6("::ffff:127.0.0.1", port: 1).isLoopback)
        #expect(try !SocketAddress.ipv6("2001:db8::1", port: 1).isLoopback)

        let unix = try SocketAddress.unixDomainSocket(path: "/run/x.sock")
        #expect(unix.path == "/run/x.sock")
        #expect(unix.port == nil)
        #expect(unix.ipAddress == nil)

        let error = #expect(throws: SocketAddressError.self) {
            try SocketAddress.ipv4("1.2.3.4", port: 70_000)
        }
        #expect(error?.reason == "port 70000 is outside 0...65535")
    }

    @Test("resolving localhost gives loopback addresses with the port")
    func resolveLocalhost() async throws {
        let addresses = try await SocketAddress.resolve(host: "localhost", port: 8080)
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { $0.isLoopback && $0.port == 8080 })
        #expect(Set(addresses).count == addresses.count)
        #expect(try await SocketAddress.resolve(host: "127.0.0.1", port: 1) == [.ipv4("127.0.0.1", port: 1)])
    }
}
