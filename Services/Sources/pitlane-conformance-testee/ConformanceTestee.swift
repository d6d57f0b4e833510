import PitlaneProtobuf

/// Answers one conformance request: reads the payload as the named test message, writes it
/// in the requested format, and reports a parse or serialize error as the runner expects.
enum ConformanceTestee {
    typealias Request = Conformance_ConformanceRequest
    typealias Response = Conformance_ConformanceResponse

    /// The messages payloads may name, and the types an `Any` in them may hold.
    static let testTypes: [any Message.Type] = [
        ProtobufTestMessages_Proto3_TestAllTypesProto3.self,
        ProtobufTestMessages_Proto2_TestAllTypesProto2.self,
    ]
    static let registry = MessageTypeRegistry(testTypes)
    /// The extensions `[full.name]` may name in JSON and text format.
    static let extensions = ExtensionMap(ProtobufTestMessages_Proto2_TestMessagesProto2Extensions.all)

    static func respond(to request: Request) -> Response {
        var response = Response()
        if request.messageType == Conformance_FailureSet.protoMessageName {
            // The runner's opening question: which tests are expected to fail. None.
            response.protobufPayload = (try? Conformance_FailureSet().serializedBytes()) ?? []
            return response
        }
        guard let type = registry.type(named: request.messageType) else {
            response.skipped = "no message type \(request.messageType)"
            return response
        }
        response.result = respond(to: request, as: type)
        return response
    }

    private static func respond<M: Message>(to request: Request, as type: M.Type) -> Response.OneOf_Result {
        let message: M
        do {
            switch request.payload {
            case .protobufPayload(let bytes)?:
                message = try M(serializedBytes: bytes)
            case .jsonPayload(let text)?:
                var options = JSONDecodingOptions()
                options.typeRegistry = registry
                options.extensions = extensions
                options.ignoreUnknownFields = request.testCategory == .jsonIgnoreUnknownParsingTest
                message = try M(jsonString: text, options: options)
            case .textPayload(let text)?:
                var options = TextFormatDecodingOptions()
                options.typeRegistry = registry
                options.extensions = extensions
                message = try M(textFormatString: text, options: options)
            case .jspbPayload?, nil:
                return .skipped("only protobuf, JSON and text format input")
            }
        } catch {
            return .parseError(String(describing: error))
        }
        do {
            switch request.requestedOutputFormat {
            case .protobuf:
                return .protobufPayload(try message.serializedBytes(options: .init(deterministic: true)))
            case .json:
                var options = JSONEncodingOptions()
                options.typeRegistry = registry
                options.extensions = extensions
                return .jsonPayload(try message.jsonString(options: options))
            case .textFormat:
                var options = TextFormatEncodingOptions()
                options.typeRegistry = registry
                options.extensions = extensions
                options.printUnknownFields = request.printUnknownFields
                return .textPayload(message.textFormatString(options: options))
            default:
                return .skipped("only protobuf, JSON and text format output")
            }
        } catch {
            return .serializeError(String(describing: error))
        }
    }
}
