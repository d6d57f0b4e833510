/// The text-format methods of a message: fields in number order out, by name in.
extension MessageGenerator {
    /// The name a field has in text format: a group's is its message type's name.
    private func textName(_ field: FieldInfo) -> String {
        if field.type == .group, let group = field.message { return group.descriptor.name }
        return field.name
    }

    func writeTextEncode(to out: inout CodeWriter) {
        out.block("\(access)func encodeTextFields(to writer: inout \(runtime)TextFormatWriter) {") { out in
            storagePrologue(mutating: false, to: &out)
            for field in message.fields {
                let name = SwiftNaming.stringLiteral(textName(field))
                let storage = base + field.storageName
                if let entry = field.mapEntry {
                    out.line("writer.writeMapField(\(name), \(entry.fields[0].codec), \(entry.fields[1].codec), \(storage))")
                } else if field.isRepeated && field.isUnverifiedString {
                    out.line(
                        "writer.writeRepeatedUnverifiedStrings(\(name), \(storage), \(field.unverifiedArguments()), recorded: self.unknownFields)"
                    )
                } else if field.isRepeated {
                    out.line("writer.writeRepeatedField(\(name), \(field.codec), \(storage))")
                } else if let oneof = field.oneof {
                    let member = SwiftNaming.escaped(field.propertyName)
                    let target = base + SwiftNaming.escaped(oneof.propertyName)
                    out.line("if case .\(member)(let value)? = \(target) { \(writeText(field, name, "value")) }")
                } else if field.hasPresence {
                    out.line("if let value = \(storage)\(field.isIndirect ? "?.value" : "") { \(writeText(field, name, "value")) }")
                } else {
                    out.line("if \(field.isNonDefault(storage)) { \(writeText(field, name, storage)) }")
                }
            }
        }
    }

    /// The statement that writes one value of a field in text format.
    private func writeText(_ field: FieldInfo, _ name: String, _ value: String) -> String {
        field.isUnverifiedString
            ? "writer.writeUnverifiedString(\(name), \(value), \(field.unverifiedArguments()), recorded: self.unknownFields)"
            : "writer.writeField(\(name), \(field.codec), \(value))"
    }

    func writeTextDecode(to out: inout CodeWriter) {
        writeDecodeByName(
            "decodeTextField(named name: String, from reader: inout \(runtime)TextFormatReader)",
            names: { [textName($0), $0.name] }, decodeCase: writeTextDecodeCase, to: &out
        )
    }

    /// The expression that reads one value of a field that is not a map or repeated.
    private func readText(_ field: FieldInfo) -> String {
        field.isUnverifiedString
            ? "reader.readUnverifiedString(\(field.unverifiedArguments()), recordingIn: &self.unknownFields)"
            : "reader.readField(\(field.codec))"
    }

    private func writeTextDecodeCase(_ field: FieldInfo, to out: inout CodeWriter) {
        let storage = base + field.storageName
        if let entry = field.mapEntry {
            out.line("    try reader.readMapField(\(entry.fields[0].codec), \(entry.fields[1].codec), into: &\(storage))")
        } else if field.isRepeated && field.isUnverifiedString {
            out.line(
                "    try reader.readRepeatedUnverifiedStrings(into: &\(storage), \(field.unverifiedArguments()), recordingIn: &self.unknownFields)"
            )
        } else if field.isRepeated {
            out.line("    try reader.readRepeatedField(\(field.codec), into: &\(storage))")
        } else if let oneof = field.oneof {
            let index = message.oneofs.firstIndex { $0 === oneof }!
            let target = base + SwiftNaming.escaped(oneof.propertyName)
            out.line("    try reader.claim(\(-1 - index), \(SwiftNaming.stringLiteral(oneof.name)))")
            out.line("    \(target) = .\(SwiftNaming.escaped(field.propertyName))(try \(readText(field)))")
        } else {
            out.line("    try reader.claim(\(field.number), \(SwiftNaming.stringLiteral(field.name)))")
            let value = "try " + readText(field)
            out.line("    \(storage) = \(field.isIndirect ? "\(runtime)Boxed(\(value))" : value)")
        }
    }
}
