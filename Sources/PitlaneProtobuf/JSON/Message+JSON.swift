/// Why JSON could not be read or written, and where.
public struct ProtobufJSONError: Error, Hashable, CustomStringConvertible {
    /// What is wrong, in words.
    public var reason: String
    /// The byte offset in the JSON input (0 when encoding).
    public var offset: Int
    /// The message being read or written.
    public var messageName: String = ""

    /// An error saying `reason` at byte `offset`; the top-level encode or decode call fills in `messageName`.
    public init(reason: String, offset: Int, messageName: String = "") {
        self.reason = reason
        self.offset = offset
        self.messageName = messageName
    }

    /// The message name, the reason and the byte offset, on one line.
    public var description: String {
        "cannot convert \(messageName.isEmpty ? "message" : messageName) from JSON: \(reason) at byte \(offset)"
    }
}

/// Message types by protobuf name, so `google.protobuf.Any` can be written and read as JSON.
public struct MessageTypeRegistry: Sendable {
    private var types: [String: any Message.Type] = [:]

    /// A registry of `types` plus the well-known types.
    public init(_ types: [any Message.Type] = []) {
        for type in Self.wellKnownTypes + types { self.types[type.protoMessageName] = type }
    }

    /// The type named `name`, such as `google.protobuf.Duration`.
    public func type(named name: String) -> (any Message.Type)? { types[name] }

    static let wellKnownTypes: [any Message.Type] = [
        Google_Protobuf_Any.self, Google_Protobuf_Duration.self, Google_Protobuf_Empty.self,
        Google_Protobuf_FieldMask.self, Google_Protobuf_Struct.self, Google_Protobuf_Value.self,
        Google_Protobuf_ListValue.self, Google_Protobuf_Timestamp.self,
        Google_Protobuf_DoubleValue.self, Google_Protobuf_FloatValue.self, Google_Protobuf_Int64Value.self,
        Google_Protobuf_UInt64Value.self, Google_Protobuf_Int32Value.self, Google_Protobuf_UInt32Value.self,
        Google_Protobuf_BoolValue.self, Google_Protobuf_StringValue.self, Google_Protobuf_BytesValue.self,
    ]
}

/// Choices for writing JSON.
public struct JSONEncodingOptions: Sendable {
    /// Write fields without presence even at their default value. Default false.
    public var alwaysPrintFieldsWithoutPresence = false
    /// Use the .proto field names (`race_name`) rather than JSON names (`raceName`). Default false.
    public var preserveProtoFieldNames = false
    /// Write enums as numbers rather than names. Default false.
    public var alwaysPrintEnumsAsInts = false
    /// The message types `Any` fields may hold, beyond the well-known types.
    public var typeRegistry = MessageTypeRegistry()
    /// The extensions to write as `"[full.name]"` members; others are not written.
    public var extensions = ExtensionMap()

    /// The defaults: JSON names, no default values printed, enums by name, well-known types only, no extensions.
    public init() {}
}

/// Choices for reading JSON.
public struct JSONDecodingOptions: Sendable {
    /// Skip members that name no field, and enum names the schema does not know. Default false.
    public var ignoreUnknownFields = false
    /// How deeply objects and arrays may nest. Default 100.
    public var recursionLimit = 100
    /// The message types `Any` fields may hold, beyond the well-known types.
    public var typeRegistry = MessageTypeRegistry()
    /// The extensions `"[full.name]"` members may name.
    public var extensions = ExtensionMap()

    /// The defaults: unknown members are errors, nesting up to 100, well-known types only, no extensions.
    public init() {}
}

extension Message {
    /// Writes the message as a JSON object of its fields, and of the extensions the writer's options list.
    public func encodeJSON(to writer: inout JSONWriter) throws {
        writer.beginObject()
        try encodeJSONFields(to: &writer)
        if !unknownFields.isEmpty {
            for ext in writer.options.extensions.extensions(of: Self.protoMessageName) {
                try ext.writeJSON(from: unknownFields, to: &writer)
            }
        }
        writer.endObject()
    }

    /// Reads a JSON object member by member into the fields they name, by JSON name or proto name.
    ///
    /// `"[full.name]"` members are read as the extensions the reader's options list. A member that names no field
    /// throws `ProtobufJSONError`, unless `ignoreUnknownFields` is set, which skips it.
    public mutating func decodeJSON(from reader: inout JSONReader) throws {
        try reader.beginObject()
        while let name = try reader.nextKey() {
            let known: Bool
            do {
                if name.hasPrefix("["),
                    let ext = reader.options.extensions.extension(of: Self.protoMessageName, named: String(name.dropFirst().dropLast()))
                {
                    try ext.readJSON(from: &reader, into: &unknownFields)
                    known = true
                } else {
                    known = try decodeJSONField(named: name, from: &reader)
                }
            } catch var failure as ProtobufJSONError {
                // Names the field, outermost first: `field "a": field "b": expected a string`.
                failure.reason = "field \"\(name)\": " + failure.reason
                throw failure
            }
            if !known {
                guard reader.options.ignoreUnknownFields else {
                    throw reader.error("no field named \"\(name)\" in \(Self.protoMessageName)")
                }
                try reader.skipValue()
            }
        }
    }

    /// The message as JSON text (proto3 JSON mapping).
    ///
    /// ```swift
    /// let json = try race.jsonString()   // {"name":"Duck Pond Dash","laps":12}
    /// ```
    public func jsonString(options: JSONEncodingOptions = .init()) throws -> String {
        String(decoding: try jsonUTF8Bytes(options: options), as: UTF8.self)
    }

    /// The message as UTF-8 JSON bytes.
    public func jsonUTF8Bytes(options: JSONEncodingOptions = .init()) throws -> [UInt8] {
        var writer = JSONWriter(options: options)
        do {
            try encodeJSON(to: &writer)
        } catch var failure as ProtobufJSONError {
            failure.messageName = Self.protoMessageName
            throw failure
        }
        return writer.bytes
    }

    /// Reads a message from JSON text.
    public init(jsonString: String, options: JSONDecodingOptions = .init()) throws {
        try self.init(jsonUTF8Bytes: Array(jsonString.utf8), options: options)
    }

    /// Reads a message from UTF-8 JSON bytes.
    public init<Bytes: Sequence<UInt8>>(jsonUTF8Bytes bytes: Bytes, options: JSONDecodingOptions = .init()) throws {
        self.init()
        var reader = JSONReader(bytes: Array(bytes), options: options)
        do {
            try decodeJSON(from: &reader)
            guard reader.isAtEnd() else { throw reader.error("unexpected text after the JSON value") }
        } catch var failure as ProtobufJSONError {
            failure.messageName = Self.protoMessageName
            throw failure
        }
    }
}

// MARK: Field helpers for generated code

extension JSONReader {
    /// Reads a JSON array (or `null`, meaning empty) into a repeated field, appending.
    @inlinable
    public mutating func readRepeatedField<C: ProtoFieldCodec>(_ codec: C.Type, into values: inout [C.Value]) throws {
        if try consumeNull() { return }
        try beginArray()
        while try nextElement() {
            values.append(try C.readJSON(from: &self))
        }
    }

    /// Reads a JSON array of enum names or numbers; with `ignoreUnknownFields`, names the
    /// enum does not have are dropped.
    @inlinable
    public mutating func readRepeatedEnumField<E: ProtoEnum>(_ type: E.Type, into values: inout [E]) throws {
        if try consumeNull() { return }
        try beginArray()
        while try nextElement() {
            if let value = try ProtoEnumCodec<E>.readEnumJSON(from: &self) { values.append(value) }
        }
    }

    /// Reads a JSON object (or `null`, meaning empty) into a map field, adding entries.
    @inlinable
    public mutating func readMapField<K: ProtoMapKeyCodec, V: ProtoFieldCodec>(
        _ key: K.Type, _ value: V.Type, into map: inout [K.Value: V.Value]
    ) throws {
        if try consumeNull() { return }
        try beginObject()
        while let name = try nextKey() {
            guard let entryKey = K.value(fromJSONKey: name) else { throw error("\"\(name)\" is not a valid map key") }
            if try V.Value.self != Google_Protobuf_Value.self && consumeNull() {
                throw error("null is not a valid map value")
            }
            map[entryKey] = try V.readJSON(from: &self)
        }
    }
}
