/// Writes `extend` fields as `MessageExtension` constants: in the declaring message, or in a
/// per-file `…Extensions` enum that also lists every extension of the file in `all`.
struct ExtensionGenerator {
    let options: GeneratorOptions

    private var runtime: String { FieldInfo.runtime }

    /// One constant per extension, as `static let` lines.
    func writeConstants(_ extensions: [ExtensionInfo], to out: inout CodeWriter) {
        for ext in extensions {
            let field = ext.field
            let name = SwiftNaming.escaped(field.propertyName)
            if let reason = ext.unsupportedReason {
                out.line("// [\(ext.fullName)]: \(reason) have no typed accessor yet; values stay unknown fields.")
                continue
            }
            out.line("/// `[\(ext.fullName)]`, field \(field.number) of `\(ext.extendee.protoName)`.")
            let arguments = "fieldNumber: \(field.number), fullName: \(SwiftNaming.stringLiteral(ext.fullName))"
            if field.isRepeated {
                out.line(
                    "\(options.accessPrefix)static let \(name) = \(runtime)RepeatedMessageExtension<\(field.codecType), \(ext.extendee.swiftName)>(\(arguments), isPacked: \(field.isPacked))"
                )
            } else {
                out.line(
                    "\(options.accessPrefix)static let \(name) = \(runtime)MessageExtension<\(field.codecType), \(ext.extendee.swiftName)>(\(arguments), defaultValue: \(field.defaultValue))"
                )
            }
        }
    }

    /// The file's enum of top-level extensions and the list of all of them, if it has any.
    func writeFileExtensions(of file: FileInfo, to out: inout CodeWriter) {
        var all: [(scope: String, ext: ExtensionInfo)] = file.extensions.map { ("", $0) }
        var pending = file.messages
        while let message = pending.popLast() {
            all += message.extensions.map { (message.swiftName + ".", $0) }
            pending += message.nestedMessages
        }
        let supported = all.filter { $0.ext.unsupportedReason == nil }
        guard !all.isEmpty else { return }
        let enumName = file.extensionsEnumName
        out.line("/// The extensions `\(file.descriptor.name)` declares; `all` is for `ExtensionMap`.")
        out.block("\(options.accessPrefix)enum \(enumName) {") { out in
            writeConstants(file.extensions, to: &out)
            let list = supported.map { "\($0.scope.isEmpty ? enumName + "." : $0.scope)\(SwiftNaming.escaped($0.ext.field.propertyName))" }
            out.line("\(options.accessPrefix)static let all: [any \(runtime)AnyMessageExtension] = [\(list.joined(separator: ", "))]")
        }
        out.line()
    }
}
