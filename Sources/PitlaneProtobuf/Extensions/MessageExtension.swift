/// A field declared outside its message by `extend` (proto2, editions): its number, its
/// type (a codec) and the message it extends. `protoc-gen-pitlane` generates one per
/// extension, as a static property:
///
/// ```swift
/// var message = TestAllTypesProto2()
/// message[extension: TestMessages_Extensions.extensionInt32] = 7
/// message.hasExtension(TestMessages_Extensions.extensionInt32)  // true
/// ```
///
/// Extension values live in the extended message's unknown fields, in wire form: a message
/// stays the size it was, code that does not know an extension passes it on unchanged, and
/// binary decoding needs no registry. Each access reads or rewrites those bytes.
public struct MessageExtension<Codec: ProtoFieldCodec, Extended: Message>: AnyMessageExtension {
    /// The extension's field number in the extended message.
    public let fieldNumber: Int
    /// The extension's full protobuf name, as JSON and text format write it in brackets.
    public let fullName: String
    /// What the extension reads as when absent.
    public let defaultValue: Codec.Value

    /// An extension of `Extended` with field `fieldNumber`; generated code makes one per `extend` field.
    public init(fieldNumber: Int, fullName: String, defaultValue: Codec.Value) {
        self.fieldNumber = fieldNumber
        self.fullName = fullName
        self.defaultValue = defaultValue
    }

    /// The full protobuf name of `Extended`.
    public var extendedMessageName: String { Extended.protoMessageName }

    /// The value in `fields`: the last occurrence, or all of them merged for a message.
    func value(in fields: UnknownFields) -> Codec.Value? {
        var value: Codec.Value?
        fields.forEachOccurrence(of: fieldNumber) { tag, reader in
            guard tag.wireType == Codec.wireType else { return try reader.skipField(tag) }
            var merged = value ?? Codec.defaultValue
            do {
                try Codec.merge(from: &reader, into: &merged)
            } catch is UnknownClosedEnumValue {
                return  // a number a closed enum does not name: it stays an unknown field
            }
            value = merged
        }
        return value
    }

    func setValue(_ value: Codec.Value?, in fields: inout UnknownFields) {
        fields.removeOccurrences(of: fieldNumber)
        guard let value else { return }
        let tag = FieldTag(fieldNumber: fieldNumber, wireType: Codec.wireType).rawValue
        fields.appendEncoded(size: ProtoSize.field(Codec.self, value, tagSize: ProtoSize.varint(UInt64(tag)))) { writer in
            writer.writeField(Codec.self, value, tag: tag)
        }
    }

    /// Writes `"[full.name]": value` when `fields` hold the extension; nothing otherwise.
    public func writeJSON(from fields: UnknownFields, to writer: inout JSONWriter) throws {
        guard let value = value(in: fields) else { return }
        writer.key("[\(fullName)]")
        try Codec.writeJSON(value, to: &writer)
    }

    /// Reads a `"[full.name]"` member's value into `fields`, replacing any earlier one; `null` clears it.
    public func readJSON(from reader: inout JSONReader, into fields: inout UnknownFields) throws {
        setValue(try reader.consumeNull() ? nil : try Codec.readJSON(from: &reader), in: &fields)
    }

    /// Writes `[full.name]: value` (or `[full.name] { … }` for a message) when `fields` hold the extension.
    public func writeText(from fields: UnknownFields, to writer: inout TextFormatWriter) {
        guard let value = value(in: fields) else { return }
        writer.writeField("[\(fullName)]", Codec.self, value)
    }

    /// Reads a `[full.name]` field's value into `fields`; giving the extension twice in one message throws.
    public func readText(from reader: inout TextFormatReader, into fields: inout UnknownFields) throws {
        try reader.claim(fieldNumber, "[\(fullName)]")
        setValue(try reader.readField(Codec.self), in: &fields)
    }
}

/// A repeated extension: every occurrence, packed or not, in order.
public struct RepeatedMessageExtension<Codec: ProtoFieldCodec, Extended: Message>: AnyMessageExtension {
    /// The extension's field number in the extended message.
    public let fieldNumber: Int
    /// The extension's full protobuf name, as JSON and text format write it in brackets.
    public let fullName: String
    /// Whether values are written as one packed run (packable types, when the schema says).
    public let isPacked: Bool

    /// A repeated extension of `Extended` with field `fieldNumber`; generated code makes one per repeated `extend` field.
    public init(fieldNumber: Int, fullName: String, isPacked: Bool) {
        self.fieldNumber = fieldNumber
        self.fullName = fullName
        self.isPacked = isPacked
    }

    /// The full protobuf name of `Extended`.
    public var extendedMessageName: String { Extended.protoMessageName }

    func values(in fields: UnknownFields) -> [Codec.Value] {
        var values: [Codec.Value] = []
        fields.forEachOccurrence(of: fieldNumber) { tag, reader in
            if tag.wireType == .lengthDelimited && Codec.wireType != .lengthDelimited {
                // A packed run, read element by element so a closed enum's unknown number
                // is passed over rather than ending the run.
                var run = ProtoReader(try reader.readLengthDelimited())
                while run.remaining > 0 { try Self.append(from: &run, to: &values) }
            } else if tag.wireType == Codec.wireType {
                try Self.append(from: &reader, to: &values)
            } else {
                try reader.skipField(tag)
            }
        }
        return values
    }

    private static func append(from reader: inout ProtoReader, to values: inout [Codec.Value]) throws {
        do {
            values.append(try Codec.read(from: &reader))
        } catch is UnknownClosedEnumValue {
            // Not a value of the closed enum: left out, as C++ leaves it among unknown fields.
        }
    }

    func setValues(_ values: [Codec.Value], in fields: inout UnknownFields) {
        fields.removeOccurrences(of: fieldNumber)
        appendValues(values, to: &fields)
    }

    /// Appends occurrences after those already there (a later packed run or element extends
    /// the field).
    func appendValues(_ values: [Codec.Value], to fields: inout UnknownFields) {
        guard !values.isEmpty else { return }
        if isPacked {
            let tag = FieldTag(fieldNumber: fieldNumber, wireType: .lengthDelimited).rawValue
            let size = ProtoSize.packed(Codec.self, values, tagSize: ProtoSize.varint(UInt64(tag)))
            fields.appendEncoded(size: size) { $0.writePacked(Codec.self, values, tag: tag) }
        } else {
            let tag = FieldTag(fieldNumber: fieldNumber, wireType: Codec.wireType).rawValue
            let size = ProtoSize.repeated(Codec.self, values, tagSize: ProtoSize.varint(UInt64(tag)))
            fields.appendEncoded(size: size) { $0.writeRepeated(Codec.self, values, tag: tag) }
        }
    }

    /// Writes `"[full.name]": [ … ]` when `fields` hold at least one value; nothing otherwise.
    public func writeJSON(from fields: UnknownFields, to writer: inout JSONWriter) throws {
        let values = values(in: fields)
        guard !values.isEmpty else { return }
        writer.key("[\(fullName)]")
        writer.beginArray()
        for value in values {
            writer.separate()
            try Codec.writeJSON(value, to: &writer)
        }
        writer.endArray()
    }

    /// Reads a `"[full.name]"` member's array (or `null`, meaning none) and appends its values to `fields`.
    public func readJSON(from reader: inout JSONReader, into fields: inout UnknownFields) throws {
        var values: [Codec.Value] = []
        try reader.readRepeatedField(Codec.self, into: &values)
        appendValues(values, to: &fields)
    }

    /// Writes each value as its own `[full.name]: value` line.
    public func writeText(from fields: UnknownFields, to writer: inout TextFormatWriter) {
        writer.writeRepeatedField("[\(fullName)]", Codec.self, values(in: fields))
    }

    /// Reads a `[full.name]` field's value, or a `[a, b]` list, and appends to the values `fields` hold.
    public func readText(from reader: inout TextFormatReader, into fields: inout UnknownFields) throws {
        // Rewritten as one run, so the message equals one built through the subscript (its
        // equality compares the bytes); each further `[ext]: value` line costs a rewrite.
        var values = self.values(in: fields)
        try reader.readRepeatedField(Codec.self, into: &values)
        setValues(values, in: &fields)
    }
}

/// An extension of any type, as `ExtensionMap` holds it for JSON and text format.
public protocol AnyMessageExtension: Sendable {
    /// The extension's field number in the extended message.
    var fieldNumber: Int { get }
    /// The extension's full protobuf name, such as `pkg.extension_int32`, as written inside brackets.
    var fullName: String { get }
    /// The full name of the message it extends.
    var extendedMessageName: String { get }
    /// Writes `"[full.name]": value` when `fields` hold the extension.
    func writeJSON(from fields: UnknownFields, to writer: inout JSONWriter) throws
    /// Reads the value of a `"[full.name]"` member into `fields`.
    func readJSON(from reader: inout JSONReader, into fields: inout UnknownFields) throws
    /// Writes `[full.name]: value` when `fields` hold the extension.
    func writeText(from fields: UnknownFields, to writer: inout TextFormatWriter)
    /// Reads the value of a `[full.name]` field into `fields`.
    func readText(from reader: inout TextFormatReader, into fields: inout UnknownFields) throws
}

extension Message {
    /// The value of a singular extension, or its default when absent; setting stores it.
    public subscript<C>(extension ext: MessageExtension<C, Self>) -> C.Value {
        get { ext.value(in: unknownFields) ?? ext.defaultValue }
        set { ext.setValue(newValue, in: &unknownFields) }
    }

    /// The values of a repeated extension, in order; setting replaces them.
    public subscript<C>(extension ext: RepeatedMessageExtension<C, Self>) -> [C.Value] {
        get { ext.values(in: unknownFields) }
        set { ext.setValues(newValue, in: &unknownFields) }
    }

    /// Whether the message holds a value of the extension.
    public func hasExtension<C>(_ ext: MessageExtension<C, Self>) -> Bool {
        unknownFields.contains(fieldNumber: ext.fieldNumber)
    }

    /// Removes the extension's value; it reads as its default again.
    public mutating func clearExtension<C>(_ ext: MessageExtension<C, Self>) {
        unknownFields.removeOccurrences(of: ext.fieldNumber)
    }

    /// Removes every value of a repeated extension.
    public mutating func clearExtension<C>(_ ext: RepeatedMessageExtension<C, Self>) {
        unknownFields.removeOccurrences(of: ext.fieldNumber)
    }
}
