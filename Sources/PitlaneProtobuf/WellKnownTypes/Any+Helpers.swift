extension Google_Protobuf_Any {
    /// Packs `message`: its bytes, and a type URL naming it under `typePrefix`.
    ///
    /// - Throws: `ProtobufEncodingError` when required fields are missing and `partial` is false.
    public init<M: Message>(message: M, partial: Bool = false, typePrefix: String = "type.googleapis.com") throws {
        self.init()
        typeURL = typePrefix + "/" + M.protoMessageName
        value = try message.serializedBytes(partial: partial, options: EncodingOptions(deterministic: true))
    }

    /// The message name after the last `/` of the type URL.
    public var typeName: String {
        guard let slash = typeURL.lastIndex(of: "/") else { return typeURL }
        return String(typeURL[typeURL.index(after: slash)...])
    }

    /// Whether this `Any` holds a message of type `M`.
    public func isA<M: Message>(_ type: M.Type) -> Bool {
        typeName == M.protoMessageName
    }
}

/// Why an `Any` could not be unpacked.
public struct AnyUnpackingError: Error, Hashable, CustomStringConvertible {
    /// The type URL the `Any` holds.
    public var typeURL: String
    /// The message name that was asked for.
    public var requested: String

    /// Names the type URL held and the type requested.
    public var description: String {
        "cannot unpack an Any holding \(typeURL) as \(requested)"
    }
}

extension Message {
    /// Unpacks an `Any` that holds this type of message.
    ///
    /// - Throws: `AnyUnpackingError` when it holds another type; `ProtobufDecodingError`
    ///   when its bytes do not decode.
    public init(unpackingAny any: Google_Protobuf_Any, partial: Bool = false, options: DecodingOptions = .defaults) throws {
        guard any.isA(Self.self) else {
            throw AnyUnpackingError(typeURL: any.typeURL, requested: Self.protoMessageName)
        }
        try self.init(serializedBytes: any.value, partial: partial, options: options)
    }
}
