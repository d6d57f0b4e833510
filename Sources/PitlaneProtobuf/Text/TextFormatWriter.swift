/// Writes protobuf text format.
///
/// Generated `encodeTextFields(to:)` methods call it field by field in number order; values
/// are written by each field's codec (`ProtoFieldCodec.writeText`).
public struct TextFormatWriter {
    /// How to write: one line or many, unknown fields, the types an `Any` may hold, extensions.
    public let options: TextFormatEncodingOptions
    @usableFromInline var bytes: [UInt8] = []
    @usableFromInline var depth = 0

    /// How deep an expanded `Any` or a nested group of unknown fields is printed; deeper ones
    /// print as their bytes, since payloads opaque to the binary decoder may nest without end.
    static let maxDepth = 100

    /// An empty writer that follows `options`.
    public init(options: TextFormatEncodingOptions = .init()) {
        self.options = options
    }

    /// The text written so far (without the trailing separator of one-line output).
    public var text: String {
        var end = bytes.endIndex
        if options.singleLine, end > 0, bytes[end - 1] == UInt8(ascii: " ") { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    // MARK: Fields, for generated code

    /// Writes one field: `name: value`, or `name { … }` for a message.
    @inlinable
    public mutating func writeField<C: ProtoFieldCodec>(_ name: String, _ codec: C.Type, _ value: C.Value) {
        if C.isTextMessage {
            beginMessage(name)
            C.writeText(value, to: &self)
            endMessage()
        } else {
            beginLine()
            write(name)
            write(": ")
            C.writeText(value, to: &self)
            endLine()
        }
    }

    /// Writes each element as its own `name: value` line.
    @inlinable
    public mutating func writeRepeatedField<C: ProtoFieldCodec>(_ name: String, _ codec: C.Type, _ values: [C.Value]) {
        for value in values { writeField(name, codec, value) }
    }

    /// Writes each entry as `name { key: … value: … }`, in key order.
    @inlinable
    public mutating func writeMapField<K: ProtoMapKeyCodec, V: ProtoFieldCodec>(
        _ name: String, _ key: K.Type, _ value: V.Type, _ map: [K.Value: V.Value]
    ) {
        for entryKey in map.keys.sorted(by: K.precedes) {
            beginMessage(name)
            writeField("key", key, entryKey)
            writeField("value", value, map[entryKey]!)
            endMessage()
        }
    }

    /// Writes the fields of `message`; an `Any` whose type the registry knows is expanded.
    public mutating func writeMessageBody<M: Message>(_ message: M) {
        if let any = message as? Google_Protobuf_Any, writeExpanded(any) {
            return
        }
        message.encodeTextFields(to: &self)
        let fields = message.unknownFields
        guard !fields.isEmpty else { return }
        var extensionNumbers: Set<Int> = []
        for ext in options.extensions.extensions(of: M.protoMessageName) {
            ext.writeText(from: fields, to: &self)
            extensionNumbers.insert(ext.fieldNumber)
        }
        guard options.printUnknownFields else { return }
        fields.bytes.withUnsafeBytes { buffer in
            var reader = ProtoReader(buffer)
            writeUnknownFields(from: &reader, skipping: extensionNumbers)
        }
    }

    // MARK: Values, for codecs

    /// Writes text as it is: a number, an enum name, `true`.
    @inlinable
    public mutating func write(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes bytes as a double-quoted string: `\n`, `\r`, `\t`, `\"`, `\'`, `\\`, and
    /// every other byte outside printable ASCII as three octal digits.
    public mutating func writeQuoted<Bytes: Sequence<UInt8>>(_ value: Bytes) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value {
            switch byte {
            case UInt8(ascii: "\n"): write("\\n")
            case UInt8(ascii: "\r"): write("\\r")
            case UInt8(ascii: "\t"): write("\\t")
            case UInt8(ascii: "\""): write("\\\"")
            case UInt8(ascii: "'"): write("\\'")
            case UInt8(ascii: "\\"): write("\\\\")
            case 0x20..<0x7F: bytes.append(byte)
            default:
                bytes.append(UInt8(ascii: "\\"))
                for shift in [6, 3, 0] { bytes.append(UInt8(ascii: "0") + (byte >> UInt8(shift)) & 7) }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    // MARK: Layout

    @usableFromInline
    mutating func beginLine() {
        guard !options.singleLine else { return }
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }

    @usableFromInline
    mutating func endLine() {
        bytes.append(options.singleLine ? UInt8(ascii: " ") : UInt8(ascii: "\n"))
    }

    @usableFromInline
    mutating func beginMessage(_ name: String) {
        beginLine()
        write(name)
        write(" {")
        endLine()
        depth += 1
    }

    @usableFromInline
    mutating func endMessage() {
        depth -= 1
        beginLine()
        write("}")
        endLine()
    }

    /// Writes an `Any` as `[url] { … }`; false (the caller prints its two fields) when the
    /// registry does not know the type, or beyond `maxDepth` levels: an `Any`'s payload is opaque
    /// bytes to the binary decoder and may nest without end.
    private mutating func writeExpanded(_ any: Google_Protobuf_Any) -> Bool {
        guard depth < Self.maxDepth, any.typeURL.contains("/"), let type = options.typeRegistry.type(named: any.typeName) else {
            return false
        }
        func expand<T: Message>(_ type: T.Type) -> Bool {
            guard let message = try? T(serializedBytes: any.value, partial: true) else { return false }
            beginMessage("[\(any.typeURL)]")
            writeMessageBody(message)
            endMessage()
            return true
        }
        return expand(type)
    }

    /// Unknown fields as C++ and Python print them: varints in decimal, fixed-width values
    /// in hex, length-delimited ones as strings, groups as nested blocks.
    private mutating func writeUnknownFields(from reader: inout ProtoReader, skipping skipped: Set<Int> = []) {
        while let tag = try? reader.nextTag() {
            let number = tag.fieldNumber
            if skipped.contains(number) {
                guard (try? reader.skipField(tag)) != nil else { return }
                continue
            }
            switch tag.wireType {
            case .varint:
                guard let value = try? reader.readVarint() else { return }
                writeUnknownLine(number, String(value))
            case .fixed64:
                guard let value = try? reader.readFixed64() else { return }
                writeUnknownLine(number, "0x" + hex(value, digits: 16))
            case .fixed32:
                guard let value = try? reader.readFixed32() else { return }
                writeUnknownLine(number, "0x" + hex(UInt64(value), digits: 8))
            case .lengthDelimited:
                guard let value = try? reader.readLengthDelimited() else { return }
                if depth < Self.maxDepth, !value.isEmpty, Self.parsesAsFields(value) {
                    // As C++ prints it: bytes that read as fields are shown as a message.
                    beginMessage(String(number))
                    var nested = ProtoReader(value)
                    writeUnknownFields(from: &nested)
                    endMessage()
                } else {
                    beginLine()
                    write("\(number): ")
                    writeQuoted(value)
                    endLine()
                }
            case .startGroup:
                beginMessage(String(number))
                let enclosing = reader.groupNumber
                reader.groupNumber = number  // nextTag() ends the group at its END_GROUP
                writeUnknownFields(from: &reader)
                reader.groupNumber = enclosing
                endMessage()
            case .endGroup:
                return  // nextTag() throws for an END_GROUP it does not expect
            }
        }
    }

    /// Whether `bytes` are a whole run of well-formed fields.
    private static func parsesAsFields(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var reader = ProtoReader(bytes)
        do {
            while let tag = try reader.nextTag() { try reader.skipField(tag) }
            return true
        } catch {
            return false
        }
    }

    private mutating func writeUnknownLine(_ number: Int, _ value: String) {
        beginLine()
        write("\(number): \(value)")
        endLine()
    }

    private func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
