/// Writes a message struct: properties, nested types and the binary codec.
struct MessageGenerator {
    let message: MessageInfo
    let model: ProtoModel
    let options: GeneratorOptions

    var access: String { options.accessPrefix }
    /// `@inlinable ` on the binary encoding methods when asked for (messages without
    /// out-of-line storage), otherwise nothing.
    var inlinable: String { options.inlinableCodec && !usesStorage ? "@inlinable " : "" }
    var runtime: String { FieldInfo.runtime }

    /// Messages with more fields than this keep them in a copy-on-write class, so copying a
    /// message copies one reference rather than every field.
    static let storageThreshold = 16

    private var usesStorage: Bool { message.fields.count > Self.storageThreshold }

    /// How method bodies reach stored fields: `self.` or the storage class's `storage.`.
    var base: String { usesStorage ? "storage." : "self." }

    /// The line that binds `storage` at the top of a method body, if the message has one.
    func storagePrologue(mutating: Bool, to out: inout CodeWriter) {
        guard usesStorage else { return }
        out.line(mutating ? "let storage = _uniqueStorage()" : "let storage = _storage")
    }

    /// Every stored field and oneof: name, type and initial value.
    private var storedProperties: [(name: String, type: String, initial: String)] {
        message.fields.filter { $0.oneof == nil }.map { field in
            (field.storageName, field.storageType, field.hasPresence ? "nil" : field.defaultValue)
        } + message.oneofs.map { (SwiftNaming.escaped($0.propertyName), "\($0.enumName)?", "nil") }
    }

    func write(to out: inout CodeWriter) {
        out.doc(message.doc)
        out.block("\(access)struct \(message.localName): \(runtime)Message {") { out in
            out.line("\(access)static let protoMessageName = \(SwiftNaming.stringLiteral(message.protoName))")
            out.line()
            writeProperties(to: &out)
            out.line("\(access)var unknownFields = \(runtime)UnknownFields()")
            out.line()
            out.line("\(access)init() {}")
            for oneof in message.oneofs {
                out.line()
                writeOneofEnum(oneof, to: &out)
            }
            for nested in message.nestedMessages where !nested.descriptor.options.mapEntry {
                out.line()
                MessageGenerator(message: nested, model: model, options: options).write(to: &out)
            }
            for nested in message.nestedEnums {
                out.line()
                EnumGenerator(enumeration: nested, options: options).write(to: &out)
            }
            if !message.extensions.isEmpty {
                out.line()
                ExtensionGenerator(options: options).writeConstants(message.extensions, to: &out)
            }
            if model.needsInitializationCheck(message) {
                out.line()
                writeIsInitialized(to: &out)
            }
            out.line()
            writeDecode(to: &out)
            out.line()
            writeEncode(to: &out)
            out.line()
            writeSize(to: &out)
            out.line()
            writeJSONEncode(to: &out)
            out.line()
            writeJSONDecode(to: &out)
            out.line()
            writeTextEncode(to: &out)
            out.line()
            writeTextDecode(to: &out)
            if usesStorage {
                out.line()
                writeStorage(to: &out)
            } else if message.fields.contains(where: \.hasPresence) {
                out.line()
                let storageAccess = inlinable.isEmpty ? "private" : "@usableFromInline"
                for field in message.fields where field.hasPresence {
                    out.line("\(storageAccess) var \(field.storageName): \(field.storageType) = nil")
                }
            }
        }
    }

    // MARK: Properties

    private func writeProperties(to out: inout CodeWriter) {
        let read = usesStorage ? "_storage." : ""
        let write = usesStorage ? "_uniqueStorage()." : ""
        for field in message.fields {
            let name = SwiftNaming.escaped(field.propertyName)
            out.doc(field.doc)
            if let oneof = field.oneof {
                out.block("\(access)var \(name): \(field.valueType) {") { out in
                    out.line(
                        "get { if case .\(name)(let value)? = self.\(SwiftNaming.escaped(oneof.propertyName)) { return value }; return \(field.defaultValue) }"
                    )
                    out.line("set { self.\(SwiftNaming.escaped(oneof.propertyName)) = .\(name)(newValue) }")
                }
            } else if field.hasPresence {
                let value = field.isIndirect ? "\(read)\(field.storageName)?.value" : read + field.storageName
                let newValue = field.isIndirect ? "\(runtime)Boxed(newValue)" : "newValue"
                out.block("\(access)var \(name): \(field.valueType) {") { out in
                    out.line("get { \(value) ?? \(field.defaultValue) }")
                    out.line("set { \(write)\(field.storageName) = \(newValue) }")
                }
                out.line("/// Whether `\(field.propertyName)` is set.")
                out.line("\(access)var has\(field.capitalizedName): Bool { \(read)\(field.storageName) != nil }")
                out.line("/// Unsets `\(field.propertyName)`; it reads as its default again.")
                out.line("\(access)mutating func clear\(field.capitalizedName)() { \(write)\(field.storageName) = nil }")
            } else if usesStorage {
                out.block("\(access)var \(name): \(field.propertyType) {") { out in
                    out.line("get { _storage.\(name) }")
                    out.line("set { _uniqueStorage().\(name) = newValue }")
                }
            } else {
                out.line("\(access)var \(name): \(field.propertyType) = \(field.defaultValue)")
            }
            out.line()
        }
        for oneof in message.oneofs {
            let name = SwiftNaming.escaped(oneof.propertyName)
            if usesStorage {
                out.block("\(access)var \(name): \(oneof.enumName)? {") { out in
                    out.line("get { _storage.\(name) }")
                    out.line("set { _uniqueStorage().\(name) = newValue }")
                }
            } else {
                out.line("\(access)var \(name): \(oneof.enumName)? = nil")
            }
            out.line()
        }
    }

    /// The copy-on-write storage of a large message, and the equality and hashing that
    /// compare its contents rather than its identity.
    private func writeStorage(to out: inout CodeWriter) {
        let properties = storedProperties
        out.line("private var _storage = _Storage()")
        out.line()
        out.line("/// `@unchecked Sendable`: a storage object is mutated only while uniquely referenced.")
        out.block("private final class _Storage: @unchecked Sendable {") { out in
            for property in properties {
                out.line("var \(property.name): \(property.type) = \(property.initial)")
            }
            out.line()
            out.line("init() {}")
            out.line()
            out.block("init(copying other: _Storage) {") { out in
                for property in properties { out.line("\(property.name) = other.\(property.name)") }
            }
        }
        out.line()
        out.block("private mutating func _uniqueStorage() -> _Storage {") { out in
            out.line("if !isKnownUniquelyReferenced(&_storage) { _storage = _Storage(copying: _storage) }")
            out.line("return _storage")
        }
        out.line()
        out.block("\(access)static func == (lhs: \(message.localName), rhs: \(message.localName)) -> Bool {") { out in
            out.line("guard lhs.unknownFields == rhs.unknownFields else { return false }")
            out.line("if lhs._storage === rhs._storage { return true }")
            let comparisons = properties.map { "lhs._storage.\($0.name) == rhs._storage.\($0.name)" }
            out.line("return " + comparisons.joined(separator: "\n            && "))
        }
        out.line()
        out.block("\(access)func hash(into hasher: inout Hasher) {") { out in
            out.line("hasher.combine(unknownFields)")
            for property in properties { out.line("hasher.combine(_storage.\(property.name))") }
        }
    }

    private func writeOneofEnum(_ oneof: OneofInfo, to out: inout CodeWriter) {
        let indirect = oneof.isIndirect ? "indirect " : ""
        out.block("\(access)\(indirect)enum \(oneof.enumName): Hashable, Sendable {") { out in
            for field in oneof.fields {
                out.line("case \(SwiftNaming.escaped(field.propertyName))(\(field.valueType))")
            }
        }
    }

    private func writeIsInitialized(to out: inout CodeWriter) {
        out.block("\(access)var isInitialized: Bool {") { out in
            storagePrologue(mutating: false, to: &out)
            for field in message.fields {
                if field.presence == .required && field.oneof == nil {
                    out.line("if \(base)\(field.storageName) == nil { return false }")
                }
                if let entry = field.mapEntry {
                    if let value = entry.fields.last?.message, model.needsInitializationCheck(value) {
                        out.line("if !\(base)\(field.storageName).values.allSatisfy(\\.isInitialized) { return false }")
                    }
                    continue
                }
                guard let target = field.message, model.needsInitializationCheck(target) else { continue }
                let name = SwiftNaming.escaped(field.propertyName)
                if field.isRepeated {
                    out.line("if !self.\(name).allSatisfy(\\.isInitialized) { return false }")
                } else if let oneof = field.oneof {
                    out.line(
                        "if case .\(name)(let value)? = self.\(SwiftNaming.escaped(oneof.propertyName)), !value.isInitialized { return false }"
                    )
                } else {
                    out.line(
                        "if \(field.hasPresence ? "self.has\(field.capitalizedName) && " : "")!self.\(name).isInitialized { return false }")
                }
            }
            out.line("return true")
        }
    }

    // MARK: Binary codec

    private func writeDecode(to out: inout CodeWriter) {
        out.block("\(access)mutating func decodeFields(from reader: inout \(runtime)ProtoReader) throws {") { out in
            storagePrologue(mutating: true, to: &out)
            out.block("while let tag = try reader.nextTag() {") { out in
                out.switchBlock("tag.rawValue") { out in
                    for field in message.fields {
                        writeDecodeCase(field, to: &out)
                    }
                    out.line("default:")
                    out.line("    try reader.readUnknownField(tag, into: &self.unknownFields)")
                }
            }
        }
    }

    private func writeDecodeCase(_ field: FieldInfo, to out: inout CodeWriter) {
        let storage = base + field.storageName
        if let entry = field.mapEntry {
            out.line("case \(field.lengthDelimitedTag):")
            if entry.fields[1].isUnverifiedString {
                out.line(
                    "    try reader.readUnverifiedStringMapEntry(\(entry.fields[0].codec), into: &\(storage), \(field.unverifiedArguments()), unknownFields: &self.unknownFields)"
                )
                return
            }
            out.line(
                "    try reader.readMapEntry(\(entry.fields[0].codec), \(entry.fields[1].codec), into: &\(storage), unknownFields: &self.unknownFields)"
            )
            return
        }
        if field.isRepeated {
            if field.type.isPackable {
                let tags = Set([field.tag, field.lengthDelimitedTag]).sorted().map(String.init).joined(separator: ", ")
                out.line("case \(tags):")
                if field.isClosedEnum {
                    out.line("    try reader.readRepeatedClosedEnum(tag: tag, into: &\(storage), unknownFields: &self.unknownFields)")
                } else {
                    out.line("    try reader.readRepeated(\(field.codec), tag: tag, into: &\(storage))")
                }
            } else if field.isGroup {
                out.line("case \(field.tag):")
                out.line("    var value = \(field.valueType)()")
                out.line("    try reader.readGroup(into: &value)")
                out.line("    \(storage).append(value)")
            } else if field.isUnverifiedString {
                out.line("case \(field.tag):")
                out.line(
                    "    let value = try reader.readUnverifiedString(\(field.unverifiedArguments(index: storage + ".count")), recordingIn: &self.unknownFields)"
                )
                out.line("    \(storage).append(value)")
            } else {
                out.line("case \(field.tag):")
                out.line("    \(storage).append(try \(field.codecType).read(from: &reader))")
            }
            return
        }
        out.line("case \(field.tag):")
        if let oneof = field.oneof {
            let name = SwiftNaming.escaped(field.propertyName)
            let target = base + SwiftNaming.escaped(oneof.propertyName)
            if field.message != nil {
                out.line("    var value = \(field.valueType)()")
                out.line("    if case .\(name)(let existing)? = \(target) { value = existing }")
                out.line("    try reader.\(field.isGroup ? "readGroup" : "readMessage")(into: &value)")
                out.line("    \(target) = .\(name)(value)")
            } else if field.isClosedEnum {
                out.line("    if let value = try reader.readClosedEnum(\(field.valueType).self, unknownFields: &self.unknownFields) {")
                out.line("        \(target) = .\(name)(value)")
                out.line("    }")
            } else {
                out.line("    \(target) = .\(name)(try \(readValue(field)))")
            }
        } else if field.message != nil {
            let read = field.isGroup ? "readGroup" : "readMessage"
            if field.isIndirect {
                out.line("    var value = \(storage)?.value ?? \(field.valueType)()")
                out.line("    try reader.\(read)(into: &value)")
                out.line("    \(storage) = \(runtime)Boxed(value)")
            } else {
                out.line("    try reader.\(read)(into: &\(storage))")
            }
        } else if field.isClosedEnum {
            out.line("    if let value = try reader.readClosedEnum(\(field.valueType).self, unknownFields: &self.unknownFields) {")
            out.line("        \(storage) = value")
            out.line("    }")
        } else {
            out.line("    \(storage) = try \(readValue(field))")
        }
    }

    /// The expression that reads one value of a scalar, string or bytes field.
    private func readValue(_ field: FieldInfo) -> String {
        field.isUnverifiedString
            ? "reader.readUnverifiedString(\(field.unverifiedArguments()), recordingIn: &self.unknownFields)"
            : "\(field.codecType).read(from: &reader)"
    }

    /// Fields are written last to first: the writer fills its buffer from the end.
    private func writeEncode(to out: inout CodeWriter) {
        out.block("\(inlinable)\(access)func encodeFields(to writer: inout \(runtime)ProtoWriter) {") { out in
            storagePrologue(mutating: false, to: &out)
            out.line("writer.writeUnknownFields(self.unknownFields)")
            for field in message.fields.reversed() {
                writeEncodeField(field, to: &out)
            }
        }
    }

    private func writeEncodeField(_ field: FieldInfo, to out: inout CodeWriter) {
        let storage = base + field.storageName
        if let entry = field.mapEntry {
            if entry.fields[1].isUnverifiedString {
                out.line(
                    "writer.writeUnverifiedStringMap(\(entry.fields[0].codec), \(storage), tag: \(field.lengthDelimitedTag), \(field.unverifiedArguments()), recorded: self.unknownFields)"
                )
            } else {
                out.line(
                    "writer.writeMap(\(entry.fields[0].codec), \(entry.fields[1].codec), \(storage), tag: \(field.lengthDelimitedTag))")
            }
            return
        }
        if field.isRepeated {
            if field.isGroup {
                out.line("for value in \(storage).reversed() { writer.writeGroup(value, fieldNumber: \(field.number)) }")
            } else if field.isUnverifiedString {
                out.line(
                    "writer.writeRepeatedUnverifiedStrings(\(storage), tag: \(field.tag), \(field.unverifiedArguments()), recorded: self.unknownFields)"
                )
            } else if field.isPacked {
                out.line("writer.writePacked(\(field.codec), \(storage), tag: \(field.lengthDelimitedTag))")
            } else {
                out.line("writer.writeRepeated(\(field.codec), \(storage), tag: \(field.tag))")
            }
            return
        }
        let write = field.isGroup ? "writer.writeGroup(value, fieldNumber: \(field.number))" : writeValue(field, "value")
        if let oneof = field.oneof {
            out.line(
                "if case .\(SwiftNaming.escaped(field.propertyName))(let value)? = \(base)\(SwiftNaming.escaped(oneof.propertyName)) { \(write) }"
            )
        } else if field.hasPresence {
            out.line("if let value = \(storage)\(field.isIndirect ? "?.value" : "") { \(write) }")
        } else {
            out.line("if \(field.isNonDefault(storage)) { \(writeValue(field, storage)) }")
        }
    }

    /// The statement that writes one value of a field that is not a group.
    private func writeValue(_ field: FieldInfo, _ value: String) -> String {
        field.isUnverifiedString
            ? "writer.writeUnverifiedString(\(value), tag: \(field.tag), \(field.unverifiedArguments()), recorded: self.unknownFields)"
            : "writer.writeField(\(field.codec), \(value), tag: \(field.tag))"
    }

    private func writeSize(to out: inout CodeWriter) {
        out.block("\(inlinable)\(access)func encodedSize() -> Int {") { out in
            guard !message.fields.isEmpty else {
                out.line("self.unknownFields.encodedSize")
                return
            }
            storagePrologue(mutating: false, to: &out)
            out.line("var size = self.unknownFields.encodedSize")
            for field in message.fields where field.oneof == nil {
                writeSizeField(field, to: &out)
            }
            for oneof in message.oneofs {
                out.switchBlock(base + SwiftNaming.escaped(oneof.propertyName)) { out in
                    for field in oneof.fields {
                        out.line("case .\(SwiftNaming.escaped(field.propertyName))(let value)?: size += \(sizeOfValue(field))")
                    }
                    out.line("case nil: break")
                }
            }
            out.line("return size")
        }
    }

    private func writeSizeField(_ field: FieldInfo, to out: inout CodeWriter) {
        let storage = base + field.storageName
        let size = "\(runtime)ProtoSize"
        if let entry = field.mapEntry, entry.fields[1].isUnverifiedString {
            out.line(
                "size += \(size).unverifiedStringMap(\(entry.fields[0].codec), \(storage), tagSize: \(field.tagSize), \(field.unverifiedArguments()), recorded: self.unknownFields)"
            )
        } else if let entry = field.mapEntry {
            out.line("size += \(size).map(\(entry.fields[0].codec), \(entry.fields[1].codec), \(storage), tagSize: \(field.tagSize))")
        } else if field.isRepeated {
            if field.isGroup {
                out.line("for value in \(storage) { size += \(size).group(value, tagSize: \(field.tagSize)) }")
            } else if field.isUnverifiedString {
                out.line(
                    "size += \(size).repeatedUnverifiedStrings(\(storage), tagSize: \(field.tagSize), \(field.unverifiedArguments()), recorded: self.unknownFields)"
                )
            } else {
                let kind = field.isPacked ? "packed" : "repeated"
                out.line("size += \(size).\(kind)(\(field.codec), \(storage), tagSize: \(field.tagSize))")
            }
        } else if field.hasPresence {
            out.line("if let value = \(storage)\(field.isIndirect ? "?.value" : "") { size += \(sizeOfValue(field)) }")
        } else {
            out.line("if \(field.isNonDefault(storage)) { size += \(sizeOfValue(field, storage)) }")
        }
    }

    /// The size of a field holding `value`, tag included.
    private func sizeOfValue(_ field: FieldInfo, _ value: String = "value") -> String {
        if field.isGroup { return "\(runtime)ProtoSize.group(\(value), tagSize: \(field.tagSize))" }
        if field.isUnverifiedString {
            return
                "\(runtime)ProtoSize.unverifiedString(\(value), tagSize: \(field.tagSize), \(field.unverifiedArguments()), recorded: self.unknownFields)"
        }
        return "\(field.tagSize) + \(field.codecType).size(of: \(value))"
    }

    // MARK: JSON

    private func writeJSONEncode(to out: inout CodeWriter) {
        out.block("\(access)func encodeJSONFields(to writer: inout \(runtime)JSONWriter) throws {") { out in
            storagePrologue(mutating: false, to: &out)
            for field in message.fields {
                let names = "json: \(SwiftNaming.stringLiteral(field.descriptor.jsonName)), proto: \(SwiftNaming.stringLiteral(field.name))"
                let storage = base + field.storageName
                if let entry = field.mapEntry {
                    out.line("try writer.writeMapField(\(names), \(entry.fields[0].codec), \(entry.fields[1].codec), \(storage))")
                } else if field.isRepeated {
                    out.line("try writer.writeRepeatedField(\(names), \(field.codec), \(storage))")
                } else if let oneof = field.oneof {
                    out.line(
                        "if case .\(SwiftNaming.escaped(field.propertyName))(let value)? = \(base)\(SwiftNaming.escaped(oneof.propertyName)) {"
                    )
                    out.line("    try writer.writeField(\(names), \(field.codec), value)")
                    out.line("}")
                } else if field.hasPresence {
                    out.line("if let value = \(storage)\(field.isIndirect ? "?.value" : "") {")
                    out.line("    try writer.writeField(\(names), \(field.codec), value)")
                    out.line("}")
                } else {
                    out.line("if \(field.isNonDefault(storage)) || writer.options.alwaysPrintFieldsWithoutPresence {")
                    out.line("    try writer.writeField(\(names), \(field.codec), \(storage))")
                    out.line("}")
                }
            }
        }
    }

    private func writeJSONDecode(to out: inout CodeWriter) {
        writeDecodeByName(
            "decodeJSONField(named name: String, from reader: inout \(runtime)JSONReader)",
            names: { [$0.descriptor.jsonName, $0.name] }, decodeCase: writeJSONDecodeCase, to: &out
        )
    }

    /// A `decode…Field(named:from:)` method: a switch from the names a field has in a format
    /// to the lines that read it; false for a name no field has.
    func writeDecodeByName(
        _ signature: String, names: (FieldInfo) -> [String],
        decodeCase: (FieldInfo, inout CodeWriter) -> Void, to out: inout CodeWriter
    ) {
        out.block("\(access)mutating func \(signature) throws -> Bool {") { out in
            guard !message.fields.isEmpty else {
                out.line("false")
                return
            }
            storagePrologue(mutating: true, to: &out)
            out.switchBlock("name") { out in
                for field in message.fields {
                    let literals = Set(names(field)).sorted().map(SwiftNaming.stringLiteral)
                    out.line("case \(literals.joined(separator: ", ")):")
                    decodeCase(field, &out)
                }
                out.line("default:")
                out.line("    return false")
            }
            out.line("return true")
        }
    }

    private func writeJSONDecodeCase(_ field: FieldInfo, to out: inout CodeWriter) {
        let storage = base + field.storageName
        if let entry = field.mapEntry {
            out.line("    try reader.readMapField(\(entry.fields[0].codec), \(entry.fields[1].codec), into: &\(storage))")
            return
        }
        if field.isRepeated {
            if let enumeration = field.enumeration {
                out.line("    try reader.readRepeatedEnumField(\(enumeration.swiftName).self, into: &\(storage))")
            } else {
                out.line("    try reader.readRepeatedField(\(field.codec), into: &\(storage))")
            }
            return
        }
        // `null` clears a field, except a google.protobuf.Value, where it is a value.
        let nullIsValue =
            field.message?.fullName == ".google.protobuf.Value"
            || field.enumeration?.fullName == ".google.protobuf.NullValue"
        let read: String
        if let enumeration = field.enumeration {
            read = "try \(runtime)ProtoEnumCodec<\(enumeration.swiftName)>.readEnumJSON(from: &reader)"
        } else {
            read = "try \(field.codecType).readJSON(from: &reader)"
        }
        let assign: (String) -> String
        if let oneof = field.oneof {
            assign = { "\(base)\(SwiftNaming.escaped(oneof.propertyName)) = .\(SwiftNaming.escaped(field.propertyName))(\($0))" }
        } else if field.isIndirect {
            assign = { "\(storage) = \(self.runtime)Boxed(\($0))" }
        } else {
            assign = { "\(storage) = \($0)" }
        }
        let clear = field.oneof != nil ? "break" : (field.hasPresence ? "\(storage) = nil" : "\(storage) = \(field.defaultValue)")
        let indent = nullIsValue ? "    " : "        "
        if !nullIsValue {
            out.line("    if try reader.consumeNull() {")
            out.line("        \(clear)")
            out.line("    } else {")
        }
        if let oneof = field.oneof, oneof.fields.count > 1 {
            // A second member of a oneof already set: which one is meant is unknowable.
            let target = base + SwiftNaming.escaped(oneof.propertyName)
            let member = SwiftNaming.escaped(field.propertyName)
            let reason = SwiftNaming.stringLiteral("\(field.descriptor.jsonName): another member of oneof \(oneof.name) is set")
            out.line("\(indent)switch \(target) { case nil, .\(member)?: break; default: throw reader.error(\(reason)) }")
        }
        if field.enumeration != nil {
            out.line("\(indent)if let value = \(read) { \(assign("value")) }")
        } else {
            out.line("\(indent)\(assign(read))")
        }
        if !nullIsValue { out.line("    }") }
    }
}
