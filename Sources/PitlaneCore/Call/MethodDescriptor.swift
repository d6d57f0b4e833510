/// A service's fully qualified name, such as `swiftkart.SwiftKartService`.
public struct ServiceDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// `package.Service`, or just `Service` without a package.
    public let fullyQualifiedService: String

    /// Names a service by its fully qualified name, such as `swiftkart.SwiftKartService`.
    public init(fullyQualifiedService: String) {
        self.fullyQualifiedService = fullyQualifiedService
    }

    /// Names a service from its proto package (empty for none) and its name.
    public init(package: String, service: String) {
        fullyQualifiedService = package.isEmpty ? service : package + "." + service
    }

    /// The fully qualified name, for logs.
    public var description: String { fullyQualifiedService }
}

/// One RPC method: its service and name; the HTTP/2 path is `/package.Service/Method`.
public struct MethodDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The service the method belongs to.
    public let service: ServiceDescriptor
    /// The method's name as the proto file declares it, such as `ListRaces`.
    public let method: String

    /// Names a method of a service.
    public init(service: ServiceDescriptor, method: String) {
        self.service = service
        self.method = method
    }

    /// Names a method of the service with this fully qualified name.
    public init(fullyQualifiedService: String, method: String) {
        self.init(service: ServiceDescriptor(fullyQualifiedService: fullyQualifiedService), method: method)
    }

    /// Parses `/package.Service/Method` (or without the leading slash).
    public init?(path: String) {
        // In the string's own bytes: this runs for every request a server receives, and
        // walking `String.UTF8View` indices cost tens of instructions a byte.
        var path = path
        let parts = path.withUTF8 { bytes -> (service: String, method: String)? in
            let start = bytes.first == UInt8(ascii: "/") ? 1 : 0
            // Plain loops: Collection's generic searches allocate per byte in debug builds.
            var slash = start
            while slash < bytes.count, bytes[slash] != UInt8(ascii: "/") { slash += 1 }
            var end = slash + 1
            while end < bytes.count, bytes[end] != UInt8(ascii: "/") { end += 1 }
            guard slash > start, slash + 1 < bytes.count, end == bytes.count else { return nil }
            return (
                String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<slash]), as: UTF8.self),
                String(decoding: UnsafeBufferPointer(rebasing: bytes[(slash + 1)...]), as: UTF8.self)
            )
        }
        guard let parts else { return nil }
        self.init(fullyQualifiedService: parts.service, method: parts.method)
    }

    /// `package.Service/Method`.
    public var fullyQualifiedMethod: String { "\(service.fullyQualifiedService)/\(method)" }

    /// `/package.Service/Method`, the HTTP/2 `:path`.
    public var path: String { "/" + fullyQualifiedMethod }

    /// `package.Service/Method`, for logs.
    public var description: String { fullyQualifiedMethod }
}
