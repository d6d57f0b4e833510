import PitlaneCore
import PitlaneProtobuf

typealias IndexedFile = Pitlane_Reflection_Index_FileDescriptorProto

/// The files a server's services are defined in, and where each symbol is: what server
/// reflection answers from. Built once; read-only after.
struct DescriptorIndex: Sendable {
    /// Serialized `FileDescriptorProto`s by file name.
    private(set) var files: [String: [UInt8]] = [:]
    private var dependencies: [String: [String]] = [:]
    /// Fully qualified names (no leading dot) of services, methods, messages, enums and
    /// extensions, to the file that defines them.
    private var symbols: [String: String] = [:]
    /// Extended message's full name → extension number → file.
    private var extensions: [String: [Int32: String]] = [:]
    /// The services the server registers, fully qualified and sorted.
    let services: [String]

    struct MalformedDescriptor: Error, CustomStringConvertible {
        let description: String
    }

    /// - Parameter services: each registered service with the generated
    ///   `fileDescriptorProtos` of its file (base64, dependencies included).
    init(services: [(descriptor: ServiceDescriptor, fileDescriptorProtos: [String])]) throws {
        self.services = Set(services.map(\.descriptor.fullyQualifiedService)).sorted()
        for encoded in services.flatMap(\.fileDescriptorProtos) {
            guard let bytes = Base64.decode(encoded) else { throw MalformedDescriptor(description: "a file descriptor is not base64") }
            let file = try IndexedFile(serializedBytes: bytes)
            guard files[file.name] == nil else { continue }
            files[file.name] = bytes
            dependencies[file.name] = file.dependency
            index(file)
        }
    }

    private mutating func index(_ file: IndexedFile) {
        let prefix = file.package.isEmpty ? "" : file.package + "."
        for service in file.service {
            symbols[prefix + service.name] = file.name
            for method in service.method { symbols[prefix + service.name + "." + method.name] = file.name }
        }
        for enumeration in file.enumType { symbols[prefix + enumeration.name] = file.name }
        for message in file.messageType { index(message, scope: prefix, in: file.name) }
        for field in file.extension { indexExtension(field, scope: prefix, in: file.name) }
    }

    private mutating func index(_ message: Pitlane_Reflection_Index_DescriptorProto, scope: String, in file: String) {
        let name = scope + message.name
        symbols[name] = file
        for enumeration in message.enumType { symbols[name + "." + enumeration.name] = file }
        for nested in message.nestedType { index(nested, scope: name + ".", in: file) }
        for field in message.extension { indexExtension(field, scope: name + ".", in: file) }
    }

    private mutating func indexExtension(_ field: Pitlane_Reflection_Index_FieldDescriptorProto, scope: String, in file: String) {
        symbols[scope + field.name] = file
        let extendee = field.extendee.hasPrefix(".") ? String(field.extendee.dropFirst()) : field.extendee
        extensions[extendee, default: [:]][field.number] = file
    }

    // MARK: Queries

    /// The file defining `symbol` (a leading dot is allowed).
    func file(containingSymbol symbol: String) -> String? {
        symbols[symbol.hasPrefix(".") ? String(symbol.dropFirst()) : symbol]
    }

    func file(extending type: String, number: Int32) -> String? {
        extensions[type]?[number]
    }

    /// The extension numbers of a known message; nil for an unknown one.
    func extensionNumbers(of type: String) -> [Int32]? {
        guard file(containingSymbol: type) != nil else { return nil }
        return (extensions[type] ?? [:]).keys.sorted()
    }

    /// `name` first, then every file it imports, each once.
    func descriptors(from name: String) -> [[UInt8]] {
        var ordered: [[UInt8]] = []
        var seen: Set<String> = []
        var pending = [name]
        while let next = pending.first {
            pending.removeFirst()
            guard seen.insert(next).inserted, let bytes = files[next] else { continue }
            ordered.append(bytes)
            pending += dependencies[next] ?? []
        }
        return ordered
    }
}
