import PitlaneCore
import PitlaneProtobuf

/// The client side of gRPC's interop tests: each case calls a `grpc.testing.TestService` and
/// checks what comes back as the test descriptions say, throwing `InteropTestFailure` when
/// something differs.
///
/// ```swift
/// try await withGRPCClient(transport: transport) { client in
///     try await InteropTestCase.largeUnary.run(using: client)
/// }
/// ```
public enum InteropTestCase: String, CaseIterable, Sendable {
    case emptyUnary = "empty_unary"
    case largeUnary = "large_unary"
    case clientCompressedUnary = "client_compressed_unary"
    case serverCompressedUnary = "server_compressed_unary"
    case clientStreaming = "client_streaming"
    case clientCompressedStreaming = "client_compressed_streaming"
    case serverStreaming = "server_streaming"
    case serverCompressedStreaming = "server_compressed_streaming"
    case pingPong = "ping_pong"
    case emptyStream = "empty_stream"
    case customMetadata = "custom_metadata"
    case statusCodeAndMessage = "status_code_and_message"
    case specialStatusMessage = "special_status_message"
    case unimplementedMethod = "unimplemented_method"
    case unimplementedService = "unimplemented_service"
    case cancelAfterBegin = "cancel_after_begin"
    case cancelAfterFirstResponse = "cancel_after_first_response"
    case timeoutOnSleepingServer = "timeout_on_sleeping_server"

    /// The name the descriptions and `--test_case` use.
    public var name: String { rawValue }

    /// Runs the case against the server `client` reaches.
    public func run<Transport: ClientTransport>(using client: GRPCClient<Transport>) async throws {
        let cases = InteropCases(service: Grpc_Testing_TestService.Client(wrapping: client), client: client)
        switch self {
        case .emptyUnary: try await cases.emptyUnary()
        case .largeUnary: try await cases.largeUnary()
        case .clientCompressedUnary: try await cases.clientCompressedUnary()
        case .serverCompressedUnary: try await cases.serverCompressedUnary()
        case .clientStreaming: try await cases.clientStreaming()
        case .clientCompressedStreaming: try await cases.clientCompressedStreaming()
        case .serverStreaming: try await cases.serverStreaming()
        case .serverCompressedStreaming: try await cases.serverCompressedStreaming()
        case .pingPong: try await cases.pingPong()
        case .emptyStream: try await cases.emptyStream()
        case .customMetadata: try await cases.customMetadata()
        case .statusCodeAndMessage: try await cases.statusCodeAndMessage()
        case .specialStatusMessage: try await cases.specialStatusMessage()
        case .unimplementedMethod: try await cases.unimplementedMethod()
        case .unimplementedService: try await cases.unimplementedService()
        case .cancelAfterBegin: try await cases.cancelAfterBegin()
        case .cancelAfterFirstResponse: try await cases.cancelAfterFirstResponse()
        case .timeoutOnSleepingServer: try await cases.timeoutOnSleepingServer()
        }
    }
}

/// What a case found that the descriptions say it must not.
public struct InteropTestFailure: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// The cases' procedures, each as the descriptions give it.
struct InteropCases<Transport: ClientTransport>: Sendable {
    let service: Grpc_Testing_TestService.Client<Transport>
    let client: GRPCClient<Transport>

    func emptyUnary() async throws {
        _ = try await service.emptyCall(Empty())
    }

    func largeUnary() async throws {
        let response = try await service.unaryCall(.largeRequest)
        try expectPayload(response.payload, size: 314_159)
    }

    func clientCompressedUnary() async throws {
        // The probe: it says it is compressed but is not, so a server that checks refuses it.
        try await expectFailure(code: .invalidArgument, "the uncompressed probe with expect_compressed") {
            _ = try await service.unaryCall(.largeRequest.with { $0.expectCompressed.value = true })
        }
        let compressed = try await service.unaryCall(
            .largeRequest.with { $0.expectCompressed.value = true }, options: .defaults.with { $0.compression = .gzip }
        )
        try expectPayload(compressed.payload, size: 314_159)
        let uncompressed = try await service.unaryCall(.largeRequest.with { $0.expectCompressed.value = false })
        try expectPayload(uncompressed.payload, size: 314_159)
    }

    func serverCompressedUnary() async throws {
        for compressed in [true, false] {
            let control = MessageCompressionControl()
            let response = try await service.unaryCall(
                .largeRequest.with { $0.responseCompressed.value = compressed },
                options: .defaults.with { $0.messageCompression = control }
            )
            try expectPayload(response.payload, size: 314_159)
            try expect(
                control.lastReadWasCompressed == compressed,
                "response_compressed \(compressed), but the response arrived \(control.lastReadWasCompressed ? "compressed" : "uncompressed")"
            )
        }
    }

    func clientStreaming() async throws {
        let response = try await service.streamingInputCall { writer in
            for size in [27_182, 8, 1_828, 45_904] {
                try await writer.write(.with { $0.payload = .zeros(size) })
            }
        }
        try expect(response.aggregatedPayloadSize == 74_922, "aggregated_payload_size \(response.aggregatedPayloadSize), not 74922")
    }

    func clientCompressedStreaming() async throws {
        try await expectFailure(code: .invalidArgument, "the uncompressed probe with expect_compressed") {
            _ = try await service.streamingInputCall { writer in
                try await writer.write(
                    .with {
                        $0.expectCompressed.value = true
                        $0.payload = .zeros(27_182)
                    })
            }
        }
        let control = MessageCompressionControl()
        let options = CallOptions.defaults.with {
            $0.compression = .gzip
            $0.messageCompression = control
        }
        let response = try await service.streamingInputCall(options: options) { writer in
            try await writer.write(
                .with {
                    $0.expectCompressed.value = true
                    $0.payload = .zeros(27_182)
                })
            control.compressesWrites = false
            try await writer.write(
                .with {
                    $0.expectCompressed.value = false
                    $0.payload = .zeros(45_904)
                })
        }
        try expect(response.aggregatedPayloadSize == 73_086, "aggregated_payload_size \(response.aggregatedPayloadSize), not 73086")
    }

    func serverStreaming() async throws {
        let sizes = [31_415, 9, 2_653, 58_979]
        let request = StreamingOutputCallRequest.with { request in
            request.responseParameters = sizes.map { size in .with { $0.size = Int32(size) } }
        }
        let payloads = try await service.streamingOutputCall(request) { response in
            var payloads: [Grpc_Testing_Payload] = []
            for try await message in response.messages { payloads.append(message.payload) }
            return payloads
        }
        try expectPayloads(payloads, sizes: sizes)
    }

    func serverCompressedStreaming() async throws {
        let expected: [(compressed: Bool, size: Int)] = [(true, 31_415), (false, 92_653)]
        let request = StreamingOutputCallRequest.with { request in
            request.responseParameters = expected.map { response in
                .with {
                    $0.compressed.value = response.compressed
                    $0.size = Int32(response.size)
                }
            }
        }
        let control = MessageCompressionControl()
        let received = try await service.streamingOutputCall(request, options: .defaults.with { $0.messageCompression = control }) {
            response in
            var received: [(compressed: Bool, payload: Grpc_Testing_Payload)] = []
            for try await message in response.messages {
                received.append((control.lastReadWasCompressed, message.payload))
            }
            return received
        }
        try expectPayloads(received.map(\.payload), sizes: expected.map(\.size))
        try expect(
            received.map(\.compressed) == expected.map(\.compressed),
            "responses compressed \(received.map(\.compressed)), not \(expected.map(\.compressed))")
    }

    func pingPong() async throws {
        let requestSizes = [27_182, 8, 1_828, 45_904]
        let responseSizes = [31_415, 9, 2_653, 58_979]
        let (replies, replied) = AsyncStream.makeStream(of: Void.self)
        let payloads = try await service.fullDuplexCall { writer in
            var waiting = replies.makeAsyncIterator()
            for (requestSize, responseSize) in zip(requestSizes, responseSizes) {
                try await writer.write(
                    .with {
                        $0.responseParameters = [.with { $0.size = Int32(responseSize) }]
                        $0.payload = .zeros(requestSize)
                    })
                guard await waiting.next() != nil else { return }
            }
        } onResponse: { response in
            defer { replied.finish() }
            var payloads: [Grpc_Testing_Payload] = []
            for try await message in response.messages {
                payloads.append(message.payload)
                replied.yield()
            }
            return payloads
        }
        try expectPayloads(payloads, sizes: responseSizes)
    }

    func emptyStream() async throws {
        let count = try await service.fullDuplexCall { _ in
        } onResponse: { response in
            var count = 0
            for try await _ in response.messages { count += 1 }
            return count
        }
        try expect(count == 0, "\(count) responses to an empty stream")
    }

    func customMetadata() async throws {
        var metadata = Metadata()
        metadata.addString("test_initial_metadata_value", forKey: EchoedMetadata.initialKey)
        metadata.addBinary([0xAB, 0xAB, 0xAB], forKey: EchoedMetadata.trailingKey)
        let sent = metadata

        let (unaryInitial, unaryTrailing) = try await service.unaryCall(request: ClientRequest(message: .largeRequest, metadata: sent)) {
            response in
            let contents = try response.accepted.get()
            try expectPayload(contents.message.payload, size: 314_159)
            return (contents.metadata, contents.trailingMetadata)
        }
        try expectEchoed(initial: unaryInitial, trailing: unaryTrailing, "UnaryCall")

        let request = StreamingOutputCallRequest.with {
            $0.responseParameters = [.with { $0.size = 314_159 }]
            $0.payload = .zeros(271_828)
        }
        let (duplexInitial, duplexTrailing) = try await service.fullDuplexCall(
            request: StreamingClientRequest(metadata: sent) { try await $0.write(request) }
        ) { response in
            var trailing = Metadata()
            let contents = try response.accepted.get()
            for try await part in contents.bodyParts {
                switch part {
                case .message(let message): try expectPayload(message.payload, size: 314_159)
                case .trailingMetadata(let metadata): trailing = metadata
                }
            }
            return (contents.metadata, trailing)
        }
        try expectEchoed(initial: duplexInitial, trailing: duplexTrailing, "FullDuplexCall")
    }

    func statusCodeAndMessage() async throws {
        try await expectEchoedStatus(code: 2, message: "test status message")
    }

    func specialStatusMessage() async throws {
        try await expectEchoedStatus(code: 2, message: "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n")
    }

    func unimplementedMethod() async throws {
        try await expectFailure(code: .unimplemented, "TestService/UnimplementedCall") {
            _ = try await service.unimplementedCall(Empty())
        }
    }

    func unimplementedService() async throws {
        try await expectFailure(code: .unimplemented, "UnimplementedService/UnimplementedCall") {
            _ = try await Grpc_Testing_UnimplementedService.Client(wrapping: client).unimplementedCall(Empty())
        }
    }

    func cancelAfterBegin() async throws {
        let (begun, began) = AsyncStream.makeStream(of: Void.self)
        let call = Task {
            defer { began.finish() }  // a call that fails before it begins must not leave us waiting
            return try await service.streamingInputCall { _ in
                began.yield()
                await waitUntilCancelled()
            }
        }
        for await _ in begun { break }
        call.cancel()
        try await expectFailure(code: .cancelled, "a StreamingInputCall cancelled after it began") {
            _ = try await call.value
        }
    }

    func cancelAfterFirstResponse() async throws {
        let (responded, firstResponse) = AsyncStream.makeStream(of: Void.self)
        let call = Task {
            defer { firstResponse.finish() }
            return try await service.fullDuplexCall { writer in
                try await writer.write(
                    .with {
                        $0.responseParameters = [.with { $0.size = 31_415 }]
                        $0.payload = .zeros(27_182)
                    })
                await waitUntilCancelled()
            } onResponse: { response in
                for try await _ in response.messages {
                    firstResponse.yield()
                    await waitUntilCancelled()
                }
            }
        }
        for await _ in responded { break }
        call.cancel()
        try await expectFailure(code: .cancelled, "a FullDuplexCall cancelled after its first response") {
            try await call.value
        }
    }

    func timeoutOnSleepingServer() async throws {
        try await expectFailure(code: .deadlineExceeded, "a FullDuplexCall with a 1 ms timeout") {
            try await service.fullDuplexCall(options: .defaults.with { $0.timeout = .milliseconds(1) }) { writer in
                try await writer.write(.with { $0.payload = .zeros(27_182) })
                await waitUntilCancelled()
            } onResponse: { response in
                for try await _ in response.messages {}
            }
        }
    }

    // MARK: Checks

    private func expectEchoedStatus(code: Int32, message: String) async throws {
        let status = Grpc_Testing_EchoStatus.with {
            $0.code = code
            $0.message = message
        }
        let unary = try await failure(of: { _ = try await service.unaryCall(.with { $0.responseStatus = status }) })
        let duplex = try await failure(of: {
            try await service.fullDuplexCall {
                try await $0.write(.with { $0.responseStatus = status })
            } onResponse: { response in
                for try await _ in response.messages {}
            }
        })
        for (method, error) in [("UnaryCall", unary), ("FullDuplexCall", duplex)] {
            try expect(error.code.status.rawValue == Int(code), "\(method): status \(error.code), not \(code)")
            try expect(error.message == message, "\(method): message \(error.message.debugDescription), not \(message.debugDescription)")
        }
    }

    private func expectEchoed(initial: Metadata, trailing: Metadata, _ method: String) throws {
        let initialValues = initial[stringValues: EchoedMetadata.initialKey]
        try expect(initialValues == ["test_initial_metadata_value"], "\(method): initial metadata echoed \(initialValues)")
        let trailingValues = trailing[binaryValues: EchoedMetadata.trailingKey]
        try expect(trailingValues == [[0xAB, 0xAB, 0xAB]], "\(method): trailing metadata echoed \(trailingValues)")
    }

    private func expectPayload(_ payload: Grpc_Testing_Payload, size: Int) throws {
        try expect(payload.body.count == size, "payload of \(payload.body.count) bytes, not \(size)")
        try expect(payload.body.allSatisfy { $0 == 0 }, "payload bytes are not all zero")
    }

    private func expectPayloads(_ payloads: [Grpc_Testing_Payload], sizes: [Int]) throws {
        let received = payloads.map(\.body.count)
        try expect(received == sizes, "payloads of \(received) bytes, not \(sizes)")
        try expect(payloads.allSatisfy { $0.body.allSatisfy { $0 == 0 } }, "payload bytes are not all zero")
    }

    private func expectFailure(code: RPCError.Code, _ what: String, _ body: () async throws -> Void) async throws {
        let error = try await failure(of: body)
        try expect(error.code == code, "\(what) failed with \(error.code) (\(error.message)), not \(code)")
    }

    /// The RPC error `body` ends with; task cancellation counts as `.cancelled`.
    private func failure(of body: () async throws -> Void) async throws -> RPCError {
        do {
            try await body()
        } catch let error as InteropTestFailure {
            throw error
        } catch let error as RPCError {
            return error
        } catch is CancellationError {
            return RPCError(code: .cancelled, message: "the task was cancelled")
        } catch {
            return RPCError(code: .unknown, message: "not an RPC error: \(error)")
        }
        throw InteropTestFailure("the call succeeded, but it should have failed")
    }

    private func expect(_ condition: Bool, _ failure: @autoclosure () -> String) throws {
        if !condition { throw InteropTestFailure(failure()) }
    }
}

/// Suspends until the task is cancelled.
func waitUntilCancelled() async {
    let (never, continuation) = AsyncStream.makeStream(of: Never.self)
    for await _ in never {}
    continuation.finish()
}

extension SimpleRequest {
    /// The large_unary request: 314159 bytes asked for, 271828 zero bytes sent.
    static var largeRequest: SimpleRequest {
        .with {
            $0.responseSize = 314_159
            $0.payload = .zeros(271_828)
        }
    }

    /// A copy changed by `update`.
    func with(_ update: (inout SimpleRequest) -> Void) -> SimpleRequest {
        var copy = self
        update(&copy)
        return copy
    }
}

extension Grpc_Testing_Payload {
    /// A payload of `count` zero bytes.
    static func zeros(_ count: Int) -> Self {
        .with { $0.body = [UInt8](repeating: 0, count: count) }
    }
}
