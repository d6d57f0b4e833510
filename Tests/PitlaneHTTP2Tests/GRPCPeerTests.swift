import Foundation
import PitlaneCore
import PitlaneHTTP2
import TestSupport
import Testing

/// Python grpcio (gRPC C-core) judges the HTTP/2 transport over real sockets on 127.0.0.1.
@Suite("HTTP/2 transport against grpcio", .timeLimit(.minutes(5)))
struct GRPCPeerTests {
    static let repositoryRoot = Peers.repositoryRoot
    static let python = Peers.python
    static let peer = Peers.script("grpc_echo_peer.py")
    static let protos = Peers.protos

    @Test("a grpcio client calls a Pitlane server: every RPC kind, errors, metadata, deadlines, cancellation")
    func grpcioClientToPitlaneServer() async throws {
        let transport = HTTP2ServerTransport(
            address: .ipv4(host: "127.0.0.1", port: 0), config: .defaults.with { $0.eventLoops.threads = 2 })
        let server = GRPCServer(transport: transport, services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let address = try await server.listeningAddress
            let port = try #require(address.port)
            let output = try await Self.run([Self.peer, "client", "--port", String(port), "--protos", Self.protos])
            #expect(output.contains("checks: 13 ok, 0 failed"), "\(output)")
        }
    }

    @Test(
        "a Pitlane client calls a grpcio server: every RPC kind, errors, metadata, deadlines",
        arguments: [nil, "gzip", "deflate"])
    func pitlaneClientToGrpcioServer(responseCompression: String?) async throws {
        let server = try await PythonServer.start(
            arguments: [Self.peer, "server", "--protos", Self.protos] + (responseCompression.map { ["--compress", $0] } ?? [])
        )
        let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: server.port))
        await #expect(throws: Never.self) {
            try await withGRPCClient(transport: transport) { client in
                try await Self.exerciseEcho(Pitlane_Test_Echo_Echo.Client(wrapping: client))
            }
        }
        await server.stop()
    }

    @Test("compression both ways: gzip and deflate requests, compressed responses", arguments: [CompressionAlgorithm.gzip, .deflate])
    func compression(_ algorithm: CompressionAlgorithm) async throws {
        var config = HTTP2ServerTransport.Config.defaults
        config.rpc.responseCompression = algorithm
        let server = GRPCServer(
            transport: HTTP2ServerTransport(address: .ipv4(host: "127.0.0.1", port: 0), config: config),
            services: [EchoService()])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            defer { server.beginGracefulShutdown() }
            let port = try #require(try await server.listeningAddress.port)
            // grpcio sends compressed requests and reads the compressed responses.
            let output = try await Self.run([Self.peer, "client", "--port", String(port), "--protos", Self.protos])
            #expect(output.contains("checks: 13 ok, 0 failed"), "\(output)")
            // So does Pitlane's client.
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port))) { client in
                let echo = Pitlane_Test_Echo_Echo.Client(wrapping: client)
                let compressed = CallOptions.defaults.with { $0.compression = algorithm }
                let text = String(repeating: "duck pond dash ", count: 1000)
                #expect(try await echo.get(.with { $0.text = text }, options: compressed).text == text)
                let lengths = try await echo.expand(
                    .with {
                        $0.repeat = 3
                        $0.payloadBytes = 1 << 20
                    }
                ) { response in
                    var lengths: [Int] = []
                    for try await message in response.messages { lengths.append(message.payload.count) }
                    return lengths
                }
                #expect(lengths == [1 << 20, 1 << 20, 1 << 20])
            }
        }
    }

    @Test("a Pitlane client calls a Pitlane server over HTTP/2, TCP and a Unix socket")
    func pitlaneToPitlane() async throws {
        let socketPath = FileManager.default.temporaryDirectory.appending(path: "pitlane-\(UInt32.random(in: 0...UInt32.max)).sock").path
        defer { try? FileManager.default.removeItem(atPath: socketPath) }
        for address in [HTTP2ServerTransport.Address.ipv4(host: "127.0.0.1", port: 0), .unixDomainSocket(path: socketPath)] {
            let server = GRPCServer(transport: HTTP2ServerTransport(address: address), services: [EchoService()])
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.serve() }
                defer { server.beginGracefulShutdown() }
                let bound = try await server.listeningAddress
                let target: HTTP2ClientTransport.Target =
                    switch address {
                    case .unixDomainSocket(let path): .unixDomainSocket(path: path)
                    default: .ipv4(host: "127.0.0.1", port: try #require(bound.port))
                    }
                try await withGRPCClient(transport: try HTTP2ClientTransport(target: target)) { client in
                    try await Self.exerciseEcho(Pitlane_Test_Echo_Echo.Client(wrapping: client))
                }
            }
        }
    }

    /// The same checks against any echo server.
    static func exerciseEcho(_ echo: Pitlane_Test_Echo_Echo.Client<HTTP2ClientTransport>) async throws {
        #expect(try await echo.get(.with { $0.text = "hello" }).text == "hello")
        let collected = try await echo.collect { writer in
            for word in ["duck", "pond", "dash"] { try await writer.write(.with { $0.text = word }) }
        }
        #expect(collected.text == "duck pond dash")
        let indices = try await echo.expand(
            .with {
                $0.repeat = 100
                $0.payloadBytes = 1000
            }
        ) { response in
            var indices: [Int32] = []
            for try await message in response.messages { indices.append(message.index) }
            return indices
        }
        #expect(indices == Array(0..<100))
        let echoed = try await echo.update { writer in
            for index in 0..<10 { try await writer.write(.with { $0.text = "m\(index)" }) }
        } onResponse: { response in
            var texts: [String] = []
            for try await message in response.messages { texts.append(message.text) }
            return texts
        }
        #expect(echoed == (0..<10).map { "m\($0)" })
        let large = try await echo.expand(
            .with {
                $0.repeat = 1
                $0.payloadBytes = 3 << 20
            }
        ) { response in
            var total = 0
            for try await message in response.messages { total += message.payload.count }
            return total
        }
        #expect(large == 3 << 20)

        let failure = await #expect(throws: RPCError.self) {
            try await echo.get(
                .with {
                    $0.failWithCode = 5
                    $0.failWithMessage = "no race ü 100% \t"
                })
        }
        #expect(failure?.code == .notFound)
        #expect(failure?.message == "no race ü 100% \t")

        var metadata: Metadata = ["x-race": "duck pond"]
        metadata.addBinary([0, 1, 0xFE, 0xFF], forKey: "x-trace-bin")
        let sent = metadata
        let (initial, trailing) = try await echo.get(request: ClientRequest(message: .with { $0.text = "m" }, metadata: sent)) { response in
            (response.metadata, try response.accepted.get().trailingMetadata)
        }
        #expect(initial[stringValues: "x-race"] == ["duck pond"])
        #expect(initial[binaryValues: "x-trace-bin"] == [[0, 1, 0xFE, 0xFF]])
        #expect(trailing[binaryValues: "x-trace-bin"] == [[0, 1, 0xFE, 0xFF]])

        let late = await #expect(throws: RPCError.self) {
            try await echo.get(.with { $0.waitForCancellation = true }, options: .defaults.with { $0.timeout = .milliseconds(200) })
        }
        #expect(late?.code == .deadlineExceeded)

        let missing = await #expect(throws: RPCError.self) {
            try await echo.client.unary(
                request: ClientRequest(message: EchoRequest()),
                descriptor: MethodDescriptor(fullyQualifiedService: "pitlane.test.echo.Echo", method: "Missing"),
                serializer: ProtobufSerializer<EchoRequest>(), deserializer: ProtobufDeserializer<EchoResponse>()
            ) { try $0.message }
        }
        #expect(missing?.code == .unimplemented)
        #expect(try await echo.get(.with { $0.text = "still fine" }).text == "still fine")
    }

    /// Runs the Python peer to its end; returns everything it printed.
    static func run(_ arguments: [String]) async throws -> String {
        try await Peers.run(arguments)
    }
}

/// A Python peer server for the length of a test: started, its port read, stopped by
/// closing its standard input. Blocking pipe work runs on dedicated threads.
final class PythonServer: Sendable {
    let process: Process
    let input: Pipe
    let port: Int

    struct StartFailure: Error, CustomStringConvertible {
        let description: String
    }

    private init(process: Process, input: Pipe, port: Int) {
        self.process = process
        self.input = input
        self.port = port
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    static func start(arguments: [String]) async throws -> PythonServer {
        try await onDedicatedThread {
            let process = Process()
            process.executableURL = URL(filePath: GRPCPeerTests.python)
            process.arguments = arguments
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let watchdog = Watchdog(process, limit: .seconds(60), what: "a Python peer server starting")
            defer { watchdog.disarm() }
            // The server prints "listening PORT" once it is serving; read that line.
            var line: [UInt8] = []
            while true {
                guard let character = output.fileHandleForReading.readData(ofLength: 1).first else {
                    throw StartFailure(description: "the Python server exited")
                }
                if character == UInt8(ascii: "\n") { break }
                line.append(character)
            }
            let text = String(decoding: line, as: UTF8.self)
            guard text.hasPrefix("listening "), let port = Int(text.dropFirst("listening ".count)) else {
                throw StartFailure(description: "unexpected first line from the Python server: \(text)")
            }
            return PythonServer(process: process, input: input, port: port)
        }
    }

    func stop() async {
        let process = self.process
        let input = self.input
        _ = try? await onDedicatedThread {
            try? input.fileHandleForWriting.close()
            let watchdog = Watchdog(process, limit: .seconds(30), what: "a Python peer server stopping")
            defer { watchdog.disarm() }
            process.waitUntilExit()
        }
    }
}

extension HTTP2ServerTransport.Config {
    func with(_ update: (inout Self) -> Void) -> Self {
        var copy = self
        update(&copy)
        return copy
    }
}
