/// Text that is not a socket address, or a host name that did not resolve.
public struct SocketAddressError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The text or host name as given.
    public let input: String
    /// What is wrong with it, e.g. `port 70000 is outside 0...65535`.
    public let reason: String

    /// An error about `input`.
    public init(input: String, reason: String) {
        self.input = input
        self.reason = reason
    }

    /// The input in quotes, then the reason.
    public var description: String {
        "\"\(input)\": \(reason)"
    }
}
