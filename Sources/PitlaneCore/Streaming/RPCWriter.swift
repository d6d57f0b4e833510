/// Something that accepts the elements of a stream.
public protocol RPCWriterProtocol<Element>: Sendable {
    associatedtype Element: Sendable
    /// Sends an element, waiting while the peer is behind (backpressure).
    func write(_ element: Element) async throws
}

/// A writer that can also end its stream.
public protocol ClosableRPCWriterProtocol<Element>: RPCWriterProtocol {
    /// Ends the stream cleanly, or with an error.
    func finish(throwing error: (any Error)?) async
}

/// Writes the messages of a stream: request messages on a client, responses on a server.
///
/// ```swift
/// try await writer.write(.with { $0.raceName = "Duck Pond Dash" })
/// ```
public struct RPCWriter<Element: Sendable>: Sendable, RPCWriterProtocol {
    private let writer: any RPCWriterProtocol<Element>

    public init(wrapping writer: some RPCWriterProtocol<Element>) {
        self.writer = writer
    }

    public func write(_ element: Element) async throws {
        try await writer.write(element)
    }

    public func write(contentsOf elements: some Sequence<Element>) async throws {
        for element in elements { try await write(element) }
    }

    /// A writer that can end its stream.
    public struct Closable: ClosableRPCWriterProtocol {
        private let writer: any ClosableRPCWriterProtocol<Element>

        public init(wrapping writer: some ClosableRPCWriterProtocol<Element>) {
            self.writer = writer
        }

        public func write(_ element: Element) async throws {
            try await writer.write(element)
        }

        public func finish(throwing error: (any Error)? = nil) async {
            await writer.finish(throwing: error)
        }
    }
}

/// A writer into a `BufferedStream`.
struct BufferedStreamWriter<Element: Sendable>: ClosableRPCWriterProtocol {
    let stream: BufferedStream<Element>

    func write(_ element: Element) async throws {
        try await stream.write(element)
    }

    func finish(throwing error: (any Error)?) async {
        stream.finish(throwing: error)
    }
}

/// A writer that transforms elements before passing them on.
struct MappingWriter<Element: Sendable, Target: Sendable>: RPCWriterProtocol {
    let target: any RPCWriterProtocol<Target>
    let transform: @Sendable (Element) throws -> Target

    func write(_ element: Element) async throws {
        try await target.write(transform(element))
    }
}
