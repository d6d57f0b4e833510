import PitlaneProtobuf

/// Writes a service's descriptors, server protocols and client stub.
struct ServiceGenerator {
    let service: ServiceDescriptorProto
    let file: FileInfo
    let model: ProtoModel
    let options: GeneratorOptions

    private var access: String { options.accessPrefix }
    private let core = "PitlaneCore."

    private var fullName: String {
        file.descriptor.package.isEmpty ? service.name : file.descriptor.package + "." + service.name
    }

    private var namespace: String { SwiftNaming.typeName(service.name, prefix: file.typePrefix) }

    struct Method {
        /// The method's `.proto` comment as doc-comment lines; empty when there is none.
        let doc: [String]
        let name: String
        let swiftName: String
        let input: String
        let output: String
        let clientStreaming: Bool
        let serverStreaming: Bool
        /// `PitlaneCore.IdempotencyLevel`'s case name.
        let idempotency: String
    }

    /// Where the service sits in its file's descriptor (`SourceCodeInfo`'s path).
    private var path: [Int32] {
        [6, Int32(file.descriptor.services.firstIndex { $0.name == service.name } ?? 0)]
    }

    private var methods: [Method] {
        service.methods.enumerated().map { index, method in
            Method(
                doc: file.descriptor.comments.docLines(path + [2, Int32(index)]),
                name: method.name, swiftName: SwiftNaming.escaped(SwiftNaming.lowerCamelCase(method.name)),
                input: model.messages[method.inputType]?.swiftName ?? "Never",
                output: model.messages[method.outputType]?.swiftName ?? "Never",
                clientStreaming: method.clientStreaming, serverStreaming: method.serverStreaming,
                idempotency: [1: "noSideEffects", 2: "idempotent"][method.idempotencyLevel] ?? "unknown"
            )
        }
    }

    func write(to out: inout CodeWriter) {
        writeNamespace(to: &out)
        if options.servers {
            out.line()
            writeServerProtocols(to: &out)
        }
        if options.clients {
            out.line()
            writeClient(to: &out)
        }
    }

    private func descriptor(_ method: Method) -> String { "\(namespace).Method.\(method.name).descriptor" }

    /// The service's file and everything it imports, each once, dependencies before dependents.
    private func fileClosure() -> [FileDescriptorProto] {
        var ordered: [FileDescriptorProto] = []
        var seen: Set<String> = []
        func visit(_ name: String) {
            guard seen.insert(name).inserted, let info = model.files[name] else { return }
            for dependency in info.descriptor.dependencies { visit(dependency) }
            ordered.append(info.descriptor)
        }
        visit(file.descriptor.name)
        return ordered
    }

    private func writeNamespace(to out: inout CodeWriter) {
        out.doc(file.descriptor.comments.docLines(path), continued: true)
        out.line("/// The `\(fullName)` service: its descriptor and its methods'.")
        out.block("\(access)enum \(namespace) {") { out in
            out.line(
                "\(access)static let descriptor = \(core)ServiceDescriptor(fullyQualifiedService: \(SwiftNaming.stringLiteral(fullName)))")
            out.line()
            out.line("/// `\(file.descriptor.name)` and every file it imports, dependencies first, as serialized")
            out.line("/// `google.protobuf.FileDescriptorProto`s in base64: what server reflection serves.")
            out.line("\(access)static let fileDescriptorProtos: [String] = [")
            for descriptor in fileClosure() { out.line("    \"\(Base64.encode(descriptor.serialized))\",") }
            out.line("]")
            out.line()
            out.block("\(access)enum Method {") { out in
                for method in methods {
                    out.block("\(access)enum \(method.name) {") { out in
                        out.line("\(access)typealias Input = \(method.input)")
                        out.line("\(access)typealias Output = \(method.output)")
                        out.line(
                            "\(access)static let descriptor = \(core)MethodDescriptor(service: \(namespace).descriptor, method: \(SwiftNaming.stringLiteral(method.name)))"
                        )
                    }
                    out.line()
                }
                out.line(
                    "\(access)static let descriptors: [\(core)MethodDescriptor] = [\(methods.map { "\($0.name).descriptor" }.joined(separator: ", "))]"
                )
            }
        }
    }

    // MARK: Server

    private func writeServerProtocols(to out: inout CodeWriter) {
        out.block("extension \(namespace) {") { out in
            out.line("/// Every method with streaming requests and responses; the form interceptors see.")
            out.block("\(access)protocol StreamingServiceProtocol: \(core)RegistrableRPCService {") { out in
                for method in methods {
                    out.line(
                        "func \(method.swiftName)(request: \(core)StreamingServerRequest<\(method.input)>, context: \(core)ServerContext) async throws -> \(core)StreamingServerResponse<\(method.output)>"
                    )
                }
            }
            out.line()
            out.line("/// Each method in its own kind's form, with request and response metadata.")
            out.block("\(access)protocol ServiceProtocol: StreamingServiceProtocol {") { out in
                for method in methods where !(method.clientStreaming && method.serverStreaming) {
                    out.line("func \(method.swiftName)\(serviceSignature(method))")
                }
            }
            out.line()
            out.line("/// Each method as a plain async function of messages.")
            out.block("\(access)protocol SimpleServiceProtocol: ServiceProtocol {") { out in
                for method in methods {
                    out.doc(method.doc)
                    out.line("func \(method.swiftName)\(simpleSignature(method))")
                }
            }
        }
        out.line()
        out.block("extension \(namespace).StreamingServiceProtocol {") { out in
            writeRegistration(unaryFastPath: false, to: &out)
        }
        out.line()
        out.block("extension \(namespace).ServiceProtocol {") { out in
            // Unary methods implemented in unary form register as such: without interceptors
            // their calls skip the streaming adapters.
            if methods.contains(where: { !$0.clientStreaming && !$0.serverStreaming }) {
                writeRegistration(unaryFastPath: true, to: &out)
                out.line()
            }
            for method in methods where !(method.clientStreaming && method.serverStreaming) {
                out.block(
                    "\(access)func \(method.swiftName)(request: \(core)StreamingServerRequest<\(method.input)>, context: \(core)ServerContext) async throws -> \(core)StreamingServerResponse<\(method.output)> {"
                ) { out in
                    let request = method.clientStreaming ? "request" : "try await \(core)ServerRequest(stream: request)"
                    let call = "try await self.\(method.swiftName)(request: \(request), context: context)"
                    out.line(method.serverStreaming ? "return \(call)" : "return \(core)StreamingServerResponse(single: \(call))")
                }
            }
        }
        out.line()
        out.block("extension \(namespace).SimpleServiceProtocol {") { out in
            for method in methods {
                out.block("\(access)func \(method.swiftName)\(serviceSignature(method)) {") { out in
                    let request = method.clientStreaming ? "request.messages" : "request.message"
                    if method.serverStreaming {
                        out.line("\(core)StreamingServerResponse(metadata: [:]) { writer in")
                        out.line("    try await self.\(method.swiftName)(request: \(request), response: writer, context: context)")
                        out.line("    return [:]")
                        out.line("}")
                    } else {
                        out.line(
                            "\(core)ServerResponse(message: try await self.\(method.swiftName)(request: \(request), context: context))")
                    }
                }
            }
        }
    }

    /// `registerMethods(with:)`: every method in streaming form, or unary ones in unary form.
    private func writeRegistration(unaryFastPath: Bool, to out: inout CodeWriter) {
        out.block("\(access)func registerMethods(with router: inout \(core)RPCRouter) {") { out in
            for method in methods {
                let unary = unaryFastPath && !method.clientStreaming && !method.serverStreaming
                out.line(unary ? "router.registerUnaryHandler(" : "router.registerHandler(")
                out.line("    forMethod: \(descriptor(method)),")
                out.line("    idempotency: .\(method.idempotency)")
                let request = unary ? "ServerRequest" : "StreamingServerRequest"
                out.line(") { (request: \(core)\(request)<\(method.input)>, context) in")
                out.line("    try await self.\(method.swiftName)(request: request, context: context)")
                out.line("}")
            }
        }
    }

    /// The `ServiceProtocol` form of a method (bidirectional methods have only the streaming one).
    private func serviceSignature(_ method: Method) -> String {
        let request =
            method.clientStreaming
            ? "\(core)StreamingServerRequest<\(method.input)>" : "\(core)ServerRequest<\(method.input)>"
        let response =
            method.serverStreaming
            ? "\(core)StreamingServerResponse<\(method.output)>" : "\(core)ServerResponse<\(method.output)>"
        return "(request: \(request), context: \(core)ServerContext) async throws -> \(response)"
    }

    private func simpleSignature(_ method: Method) -> String {
        let request = method.clientStreaming ? "\(core)RPCAsyncSequence<\(method.input), any Error>" : method.input
        if method.serverStreaming {
            return "(request: \(request), response: \(core)RPCWriter<\(method.output)>, context: \(core)ServerContext) async throws"
        }
        return "(request: \(request), context: \(core)ServerContext) async throws -> \(method.output)"
    }

    // MARK: Client

    private func writeClient(to out: inout CodeWriter) {
        out.block("extension \(namespace) {") { out in
            out.line("/// Calls the service's methods through a `GRPCClient`.")
            out.block("\(access)struct Client<Transport: \(core)ClientTransport>: Sendable {") { out in
                out.line("\(access)let client: \(core)GRPCClient<Transport>")
                out.line()
                out.line("\(access)init(wrapping client: \(core)GRPCClient<Transport>) {")
                out.line("    self.client = client")
                out.line("}")
                for method in methods {
                    out.line()
                    writeClientMethods(method, to: &out)
                }
            }
        }
    }

    private func writeClientMethods(_ method: Method, to out: inout CodeWriter) {
        let kind: String
        switch (method.clientStreaming, method.serverStreaming) {
        case (false, false): kind = "unary"
        case (true, false): kind = "clientStreaming"
        case (false, true): kind = "serverStreaming"
        case (true, true): kind = "bidirectionalStreaming"
        }
        let requestType =
            method.clientStreaming
            ? "\(core)StreamingClientRequest<\(method.input)>" : "\(core)ClientRequest<\(method.input)>"
        let responseType =
            method.serverStreaming
            ? "\(core)StreamingClientResponse<\(method.output)>" : "\(core)ClientResponse<\(method.output)>"
        // The response handler runs in the caller's task and isolation (the client passes the
        // caller's actor on), so it is neither escaping nor `@Sendable`: main-actor code may set
        // its own state in it. A request producer runs beside it, in a task of its own.
        let handler = "(\(responseType)) async throws -> Result"
        let options = "options: \(core)CallOptions = .defaults"
        let isolation = "isolation: isolated (any _Concurrency.Actor)? = #isolation"
        let serialization =
            "serializer: \(core)CodecSerializer<\(method.input)>(client.messageCodec), deserializer: \(core)CodecDeserializer<\(method.output)>(client.messageCodec),"

        let calls = "/// Calls `\(fullName)/\(method.name)`"
        // The general form: a request value and a response handler.
        out.doc(method.doc, continued: true)
        out.line("\(calls): the request as given, the response to `handleResponse`, which runs where the caller does.")
        out.block(
            "\(access)func \(method.swiftName)<Result>(request: \(requestType), \(options), \(isolation), onResponse handleResponse: \(handler)) async throws -> Result {"
        ) { out in
            out.line("try await client.\(kind)(")
            out.line("    request: request, descriptor: \(descriptor(method)),")
            out.line("    \(serialization)")
            out.line("    options: options, isolation: isolation, onResponse: handleResponse")
            out.line(")")
        }
        out.line()
        // The convenient form: messages in, and for single responses the message out.
        let metadata = "metadata: \(core)Metadata = [:]"
        let producer = "requestProducer: @escaping @Sendable (\(core)RPCWriter<\(method.input)>) async throws -> Void"
        let makeRequest =
            method.clientStreaming
            ? "\(core)StreamingClientRequest(metadata: metadata, producer: requestProducer)"
            : "\(core)ClientRequest(message: message, metadata: metadata)"
        let inputs = method.clientStreaming ? "\(metadata), \(options), \(producer)" : "_ message: \(method.input), \(metadata), \(options)"
        let requests = method.clientStreaming ? "the request messages from `requestProducer`" : "one request message"
        out.doc(method.doc, continued: true)
        if method.serverStreaming {
            out.line("\(calls): \(requests), the responses to `handleResponse`.")
            let handled = method.clientStreaming ? "\(metadata), \(options), \(isolation), \(producer)" : "\(inputs), \(isolation)"
            out.block(
                "\(access)func \(method.swiftName)<Result>(\(handled), onResponse handleResponse: \(handler)) async throws -> Result {"
            ) { out in
                out.line(
                    "try await \(method.swiftName)(request: \(makeRequest), options: options, isolation: isolation, onResponse: handleResponse)"
                )
            }
        } else {
            // The message alone needs no handler of the caller's: it is read on the call's task.
            out.line("\(calls): \(requests); returns the response message or throws the RPC's error.")
            out.block("\(access)func \(method.swiftName)(\(inputs)) async throws -> \(method.output) {") { out in
                out.line("try await client.\(kind)(")
                out.line("    request: \(makeRequest), descriptor: \(descriptor(method)),")
                out.line("    \(serialization)")
                out.line("    options: options")
                out.line(")")
            }
        }
    }
}
