/// A service's fully qualified name, such as `swiftkart.SwiftKartService`.
public struct ServiceDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// `package.Service`, or just `Service` without a package.
    public let fullyQualifiedService: String

    public init(fullyQualifiedService: String) {
        self.fullyQualifiedService = fullyQualifiedService
    }

    public init(package: String, service: String) {
        fullyQualifiedService = package.isEmpty ? service : package + "." + service
    }

    public var description: String { fullyQualifiedService }
}

/// One RPC method: its service and name; the HTTP/2 path is `/package.Service/Method`.
public struct MethodDescriptor: Sendable, Hashable, CustomStringConvertible {
    public let service: ServiceDescriptor
    public let method: String

    public init(service: ServiceDescriptor, method: String) {
        self.service = service
        self.method = method
    }

    public init(fullyQualifiedService: String, method: String) {
        self.init(service: ServiceDescriptor(fullyQualifiedService: fullyQualifiedService), method: method)
    }

    /// Parses `/package.Service/Method` (or without the leading slash).
    public init?(path: String) {
        // Byte by byte: this runs for every request a server receives.
        var bytes = path.utf8[...]
        if bytes.first == UInt8(ascii: "/") { bytes = bytes.dropFirst() }
        guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let service = bytes[..<slash]
        let method = bytes[bytes.index(after: slash)...]
        guard !service.isEmpty, !method.isEmpty, !method.contains(UInt8(ascii: "/")) else { return nil }
        self.init(fullyQualifiedService: String(decoding: service, as: UTF8.self), method: String(decoding: method, as: UTF8.self))
    }

    /// `package.Service/Method`.
    public var fullyQualifiedMethod: String { "\(service.fullyQualifiedService)/\(method)" }

    /// `/package.Service/Method`, the HTTP/2 `:path`.
    public var path: String { "/" + fullyQualifiedMethod }

    public var description: String { fullyQualifiedMethod }
}
