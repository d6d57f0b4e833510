/// What a server checks and records of each request message as it decodes it: the size
/// limit, the observer's count of received bytes, the compression the message came with.
@usableFromInline
package struct RequestMessageChecks: Sendable {
    @usableFromInline let limit: Int
    @usableFromInline let observed: ObservedCall?
    @usableFromInline let compression: MessageCompressionControl

    @usableFromInline
    init(limit: Int, observed: ObservedCall?, compression: MessageCompressionControl) {
        self.limit = limit
        self.observed = observed
        self.compression = compression
    }

    /// Checks of the size limit alone, with nothing observed.
    package init(limit: Int) {
        self.init(limit: limit, observed: nil, compression: MessageCompressionControl())
    }

    /// One request message from its part: within the size limit, its compression recorded,
    /// deserialized.
    @inlinable
    func decode<Input>(_ part: RPCRequestPart, with deserializer: some MessageDeserializer<Input>) throws -> Input {
        guard case .message(let bytes, let flags) = part else {
            throw RPCError(code: .internal, message: "the client sent metadata twice")
        }
        guard bytes.count <= limit else {
            throw RPCError(code: .resourceExhausted, message: "request message of \(bytes.count) bytes exceeds the limit of \(limit)")
        }
        observed?.received(bytes.count)
        compression.recordRead(flags)
        do {
            return try deserializer.deserialize(bytes)
        } catch let error as RPCError {
            throw error
        } catch {
            throw RPCError(code: .internal, message: "cannot deserialize the request: \(error)")
        }
    }
}
