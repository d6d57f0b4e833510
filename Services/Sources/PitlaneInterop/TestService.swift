import PitlaneCore
import PitlaneProtobuf

public typealias Empty = Grpc_Testing_Empty
public typealias SimpleRequest = Grpc_Testing_SimpleRequest
public typealias SimpleResponse = Grpc_Testing_SimpleResponse
public typealias StreamingInputCallRequest = Grpc_Testing_StreamingInputCallRequest
public typealias StreamingInputCallResponse = Grpc_Testing_StreamingInputCallResponse
public typealias StreamingOutputCallRequest = Grpc_Testing_StreamingOutputCallRequest
public typealias StreamingOutputCallResponse = Grpc_Testing_StreamingOutputCallResponse
public typealias ResponseParameters = Grpc_Testing_ResponseParameters

/// `grpc.testing.TestService` as gRPC's interop test descriptions specify it: payloads of the
/// requested sizes, echoed metadata and status, request compression checked
/// (`expect_compressed`) and response compression chosen per message (`response_compressed`,
/// `ResponseParameters.compressed`).
///
/// Responses are compressed only when the server transport compresses responses: serve it
/// with `InteropServer`, which sets that up.
public struct TestService: Grpc_Testing_TestService.ServiceProtocol {
    public init() {}

    public func emptyCall(request: ServerRequest<Empty>, context: ServerContext) async throws -> ServerResponse<Empty> {
        let echo = EchoedMetadata(request.metadata)
        return ServerResponse(message: Empty(), metadata: echo.initial, trailingMetadata: echo.trailing)
    }

    public func unaryCall(request: ServerRequest<SimpleRequest>, context: ServerContext) async throws -> ServerResponse<SimpleResponse> {
        let echo = EchoedMetadata(request.metadata)
        let message = request.message
        try Self.checkCompression(expected: message.hasExpectCompressed ? message.expectCompressed.value : nil, context)
        if message.hasResponseStatus { try Self.fail(with: message.responseStatus, trailing: echo.trailing) }
        context.messageCompression.compressesWrites = message.responseCompressed.value
        let payload = try Self.payload(type: message.responseType, size: message.responseSize)
        return ServerResponse(message: .with { $0.payload = payload }, metadata: echo.initial, trailingMetadata: echo.trailing)
    }

    public func cacheableUnaryCall(
        request: ServerRequest<SimpleRequest>, context: ServerContext
    ) async throws -> ServerResponse<SimpleResponse> {
        try await unaryCall(request: request, context: context)
    }

    public func streamingOutputCall(
        request: ServerRequest<StreamingOutputCallRequest>, context: ServerContext
    ) async throws -> StreamingServerResponse<StreamingOutputCallResponse> {
        let echo = EchoedMetadata(request.metadata)
        let message = request.message
        if message.hasResponseStatus { try Self.fail(with: message.responseStatus, trailing: echo.trailing) }
        return StreamingServerResponse(metadata: echo.initial) { writer in
            try await Self.respond(to: message, writer, context)
            return echo.trailing
        }
    }

    public func streamingInputCall(
        request: StreamingServerRequest<StreamingInputCallRequest>, context: ServerContext
    ) async throws -> ServerResponse<StreamingInputCallResponse> {
        let echo = EchoedMetadata(request.metadata)
        var total = 0
        for try await message in request.messages {
            try Self.checkCompression(expected: message.hasExpectCompressed ? message.expectCompressed.value : nil, context)
            total += message.payload.body.count
        }
        return ServerResponse(
            message: .with { $0.aggregatedPayloadSize = Int32(total) },
            metadata: echo.initial, trailingMetadata: echo.trailing)
    }

    public func fullDuplexCall(
        request: StreamingServerRequest<StreamingOutputCallRequest>, context: ServerContext
    ) async throws -> StreamingServerResponse<StreamingOutputCallResponse> {
        let echo = EchoedMetadata(request.metadata)
        return StreamingServerResponse(metadata: echo.initial) { writer in
            for try await message in request.messages {
                if message.hasResponseStatus { try Self.fail(with: message.responseStatus, trailing: echo.trailing) }
                try await Self.respond(to: message, writer, context)
            }
            return echo.trailing
        }
    }

    public func halfDuplexCall(
        request: StreamingServerRequest<StreamingOutputCallRequest>, context: ServerContext
    ) async throws -> StreamingServerResponse<StreamingOutputCallResponse> {
        let echo = EchoedMetadata(request.metadata)
        return StreamingServerResponse(metadata: echo.initial) { writer in
            var received: [StreamingOutputCallRequest] = []
            for try await message in request.messages { received.append(message) }
            for message in received {
                if message.hasResponseStatus { try Self.fail(with: message.responseStatus, trailing: echo.trailing) }
                try await Self.respond(to: message, writer, context)
            }
            return echo.trailing
        }
    }

    /// The one method the descriptions say no server implements.
    public func unimplementedCall(request: ServerRequest<Empty>, context: ServerContext) async throws -> ServerResponse<Empty> {
        throw RPCError(code: .unimplemented, message: "grpc.testing.TestService/UnimplementedCall is not implemented")
    }

    // MARK: Features shared by the methods

    /// One response per response parameter, each after its interval, compressed as it says.
    private static func respond(
        to request: StreamingOutputCallRequest, _ writer: RPCWriter<StreamingOutputCallResponse>, _ context: ServerContext
    ) async throws {
        for parameters in request.responseParameters {
            if parameters.intervalUs > 0 {
                // The descriptions ask for the pause: it is behaviour, not synchronization.
                try await Task.sleep(for: .microseconds(parameters.intervalUs))
            }
            let payload = try payload(type: request.responseType, size: parameters.size)
            context.messageCompression.compressesWrites = parameters.compressed.value
            try await writer.write(.with { $0.payload = payload })
        }
    }

    /// CompressedRequest: a request that says it must arrive compressed (or must not) fails
    /// with INVALID_ARGUMENT when it did not (or did).
    private static func checkCompression(expected: Bool?, _ context: ServerContext) throws {
        guard let expected else { return }
        let compressed = context.messageCompression.lastReadWasCompressed
        guard compressed != expected else { return }
        throw RPCError(
            code: .invalidArgument,
            message: expected
                ? "expected a compressed request, but it arrived uncompressed"
                : "expected an uncompressed request, but it arrived compressed")
    }

    /// Echo Status: ends the RPC with the requested status (an OK one is no failure).
    private static func fail(with status: Grpc_Testing_EchoStatus, trailing: Metadata) throws {
        guard status.code != 0 else { return }
        guard let code = Status.Code(rawValue: Int(status.code)).flatMap(RPCError.Code.init) else {
            throw RPCError(code: .invalidArgument, message: "no status code \(status.code)")
        }
        throw RPCError(code: code, message: status.message, metadata: trailing)
    }

    /// A payload of `size` zero bytes; COMPRESSABLE is the only type there is.
    private static func payload(type: Grpc_Testing_PayloadType, size: Int32) throws -> Grpc_Testing_Payload {
        guard case .compressable = type else {
            throw RPCError(code: .invalidArgument, message: "payload type \(type.rawValue) is not supported")
        }
        guard size >= 0 else { throw RPCError(code: .invalidArgument, message: "negative payload size \(size)") }
        return .with {
            $0.type = type
            $0.body = [UInt8](repeating: 0, count: Int(size))
        }
    }
}

/// Echo Metadata: what the client sent under the two echo keys, to send back as initial and
/// trailing metadata.
struct EchoedMetadata: Sendable {
    static let initialKey = "x-grpc-test-echo-initial"
    static let trailingKey = "x-grpc-test-echo-trailing-bin"

    var initial = Metadata()
    var trailing = Metadata()

    init(_ request: Metadata) {
        for value in request[Self.initialKey] { initial.add(value, forKey: Self.initialKey) }
        for value in request[Self.trailingKey] { trailing.add(value, forKey: Self.trailingKey) }
    }
}
