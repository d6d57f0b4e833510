/// A server transport bound to an address, such as a TCP port.
public protocol ListeningServerTransport: ServerTransport {
    /// The type of the address, such as the socket address a TCP transport binds.
    associatedtype ListeningAddress: Sendable
    /// The address the transport listens on, once it does (port 0 resolved to the real port).
    var listeningAddress: ListeningAddress { get async throws }
}

extension GRPCServer where Transport: ListeningServerTransport {
    /// The address the server listens on; waits until `serve()` has bound it.
    public var listeningAddress: Transport.ListeningAddress {
        get async throws { try await transport.listeningAddress }
    }
}
