/// Writes an enum: open enums add `UNRECOGNIZED(Int)`, closed ones do not.
struct EnumGenerator {
    let enumeration: EnumInfo
    let options: GeneratorOptions

    private var access: String { options.accessPrefix }

    func write(to out: inout CodeWriter) {
        let cases = enumeration.cases
        let primary = cases.filter { !$0.isAlias }
        let name = enumeration.localName
        out.doc(enumeration.doc)
        out.block("\(access)enum \(name): \(FieldInfo.runtime)ProtoEnum {") { out in
            for value in primary {
                out.doc(enumeration.valueDocs[value.protoName] ?? [])
                out.line("case \(SwiftNaming.escaped(value.caseName)) // = \(value.number)")
            }
            if !enumeration.closed {
                out.line("/// A number this version of the schema does not name, kept as read.")
                out.line("case UNRECOGNIZED(Int)")
            }
            for alias in cases where alias.isAlias && alias.declaresName {
                let target = primary.first { $0.number == alias.number }!
                out.line()
                out.line("\(access)static let \(SwiftNaming.escaped(alias.caseName)) = \(name).\(SwiftNaming.escaped(target.caseName))")
            }
            out.line()
            out.line("\(access)init() { self = .\(SwiftNaming.escaped(primary[0].caseName)) }")
            out.line()
            out.block("\(access)init?(rawValue: Int) {") { out in
                out.switchBlock("rawValue") { out in
                    for value in primary {
                        out.line("case \(value.number): self = .\(SwiftNaming.escaped(value.caseName))")
                    }
                    out.line(enumeration.closed ? "default: return nil" : "default: self = .UNRECOGNIZED(rawValue)")
                }
            }
            out.line()
            out.block("\(access)var rawValue: Int {") { out in
                out.switchBlock("self") { out in
                    for value in primary {
                        out.line("case .\(SwiftNaming.escaped(value.caseName)): \(value.number)")
                    }
                    if !enumeration.closed { out.line("case .UNRECOGNIZED(let number): number") }
                }
            }
            out.line()
            out.block("\(access)var protoName: String? {") { out in
                out.switchBlock("self") { out in
                    for value in primary {
                        out.line("case .\(SwiftNaming.escaped(value.caseName)): \(SwiftNaming.stringLiteral(value.protoName))")
                    }
                    if !enumeration.closed { out.line("case .UNRECOGNIZED: nil") }
                }
            }
            out.line()
            out.block("\(access)init?(protoName: String) {") { out in
                out.switchBlock("protoName") { out in
                    for value in cases {
                        out.line("case \(SwiftNaming.stringLiteral(value.protoName)): self = .\(SwiftNaming.escaped(value.caseName))")
                    }
                    out.line("default: return nil")
                }
            }
            out.line()
            let all = primary.map { ".\(SwiftNaming.escaped($0.caseName))" }.joined(separator: ", ")
            out.line("\(access)static let allCases: [\(name)] = [\(all)]")
        }
    }
}
