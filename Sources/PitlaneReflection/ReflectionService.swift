import PitlaneCore
import PitlaneProtobuf

/// gRPC server reflection, both `grpc.reflection.v1` and `grpc.reflection.v1alpha` (the one
/// older clients ask): which services the server has, and the descriptors of the files that
/// define them, so that grpcurl, grpcui, Postman or Kreya can call it without its .proto
/// files.
///
/// Each generated service carries its file's descriptors (`fileDescriptorProtos`):
///
/// ```swift
/// let reflection = try ReflectionService(services: [
///     (SwiftKartService.descriptor, SwiftKartService.fileDescriptorProtos),
///     (Grpc_Health_V1_Health.descriptor, Grpc_Health_V1_Health.fileDescriptorProtos),
/// ])
/// let server = GRPCServer(transport: transport, services: [RaceService(...), health, reflection])
/// ```
///
/// The reflection services list themselves too.
public struct ReflectionService: RegistrableRPCService {
    private let index: DescriptorIndex

    /// A reflection service describing `services`, each with its generated `fileDescriptorProtos`
    /// (base64-encoded `FileDescriptorProto`s of its file and the files it imports).
    ///
    /// - Throws: an error when a file descriptor is not base64 or does not decode as a `FileDescriptorProto`.
    public init(services: [(descriptor: ServiceDescriptor, fileDescriptorProtos: [String])]) throws {
        index = try DescriptorIndex(
            services: services + [
                (Grpc_Reflection_V1_ServerReflection.descriptor, Grpc_Reflection_V1_ServerReflection.fileDescriptorProtos),
                (Grpc_Reflection_V1alpha_ServerReflection.descriptor, Grpc_Reflection_V1alpha_ServerReflection.fileDescriptorProtos),
            ])
    }

    /// Registers `ServerReflectionInfo` of both `grpc.reflection.v1` and `grpc.reflection.v1alpha` with `router`.
    public func registerMethods(with router: inout RPCRouter) {
        Version1(index: index).registerMethods(with: &router)
        Version1Alpha(index: index).registerMethods(with: &router)
    }

    private struct Version1: Grpc_Reflection_V1_ServerReflection.SimpleServiceProtocol {
        let index: DescriptorIndex

        func serverReflectionInfo(
            request: RPCAsyncSequence<Grpc_Reflection_V1_ServerReflectionRequest, any Error>,
            response: RPCWriter<Grpc_Reflection_V1_ServerReflectionResponse>, context: ServerContext
        ) async throws {
            for try await question in request { try await response.write(index.answer(question)) }
        }
    }

    /// v1alpha's messages are v1's on the wire: questions and answers pass through v1's.
    private struct Version1Alpha: Grpc_Reflection_V1alpha_ServerReflection.SimpleServiceProtocol {
        let index: DescriptorIndex

        func serverReflectionInfo(
            request: RPCAsyncSequence<Grpc_Reflection_V1alpha_ServerReflectionRequest, any Error>,
            response: RPCWriter<Grpc_Reflection_V1alpha_ServerReflectionResponse>, context: ServerContext
        ) async throws {
            for try await question in request {
                let asked = try Grpc_Reflection_V1_ServerReflectionRequest(serializedBytes: try question.serializedBytes())
                let answer = try Grpc_Reflection_V1alpha_ServerReflectionResponse(
                    serializedBytes: try index.answer(asked).serializedBytes())
                try await response.write(answer)
            }
        }
    }
}

extension DescriptorIndex {
    /// The answer to one reflection request; unknown names get an error response, not an
    /// error of the stream.
    func answer(_ request: Grpc_Reflection_V1_ServerReflectionRequest) -> Grpc_Reflection_V1_ServerReflectionResponse {
        var response = Grpc_Reflection_V1_ServerReflectionResponse()
        response.validHost = request.host
        response.originalRequest = request
        switch request.messageRequest {
        case .listServices:
            response.listServicesResponse = .with { $0.service = services.map { name in .with { $0.name = name } } }
        case .fileByFilename(let name):
            response.messageResponse =
                files[name] == nil
                ? Self.notFound("no file named \(name)") : Self.descriptors(self.descriptors(from: name))
        case .fileContainingSymbol(let symbol):
            response.messageResponse =
                file(containingSymbol: symbol).map { Self.descriptors(descriptors(from: $0)) }
                ?? Self.notFound("no symbol named \(symbol)")
        case .fileContainingExtension(let asked):
            response.messageResponse =
                file(extending: asked.containingType, number: asked.extensionNumber)
                .map { Self.descriptors(descriptors(from: $0)) }
                ?? Self.notFound("no extension \(asked.extensionNumber) of \(asked.containingType)")
        case .allExtensionNumbersOfType(let type):
            if let numbers = extensionNumbers(of: type) {
                response.allExtensionNumbersResponse = .with {
                    $0.baseTypeName = type
                    $0.extensionNumber = numbers
                }
            } else {
                response.messageResponse = Self.notFound("no message named \(type)")
            }
        case nil:
            response.errorResponse = .with {
                $0.errorCode = Int32(Status.Code.invalidArgument.rawValue)
                $0.errorMessage = "the request asks nothing: set one of message_request's fields"
            }
        }
        return response
    }

    private static func descriptors(_ files: [[UInt8]]) -> Grpc_Reflection_V1_ServerReflectionResponse.OneOf_MessageResponse {
        .fileDescriptorResponse(.with { $0.fileDescriptorProto = files })
    }

    private static func notFound(_ message: String) -> Grpc_Reflection_V1_ServerReflectionResponse.OneOf_MessageResponse {
        .errorResponse(
            .with {
                $0.errorCode = Int32(Status.Code.notFound.rawValue)
                $0.errorMessage = message
            })
    }
}
