/// The .proto files of one protoc run, with names, features and types resolved for Swift.
final class ProtoModel {
    private(set) var files: [String: FileInfo] = [:]
    /// Messages by full name with a leading dot, as `type_name` spells them.
    private(set) var messages: [String: MessageInfo] = [:]
    private(set) var enums: [String: EnumInfo] = [:]

    init(files descriptors: [FileDescriptorProto]) throws {
        // Names first, across all files, so fields can refer to any type.
        for descriptor in descriptors {
            let file = try FileInfo(descriptor)
            files[descriptor.name] = file
            let scope = descriptor.package.isEmpty ? "" : "." + descriptor.package
            for (index, message) in descriptor.messageTypes.enumerated() {
                file.messages.append(
                    register(
                        message, scope: scope, swiftScope: file.typePrefix, parent: nil, features: file.features, file: file,
                        path: [4, Int32(index)]))
            }
            for (index, enumeration) in descriptor.enumTypes.enumerated() {
                file.enums.append(
                    register(
                        enumeration, scope: scope, swiftScope: file.typePrefix, features: file.features, file: file,
                        path: [5, Int32(index)]))
            }
        }
        for message in messages.values {
            try resolveFields(of: message)
        }
        for message in messages.values {
            markIndirectFields(of: message)
        }
        for file in files.values {
            let scope = file.descriptor.package
            file.extensions = try file.descriptor.extensions.map { try resolveExtension($0, scope: scope, features: file.features) }
        }
        for message in messages.values {
            message.extensions = try message.descriptor.extensions.map {
                try resolveExtension($0, scope: message.protoName, features: message.features)
            }
        }
        // Extension constants share a scope with the file enum's `all` or the message's static
        // members, and with each other (`foo_bar` and `fooBar`).
        for scope in files.values.map(\.extensions) + messages.values.map(\.extensions) {
            var taken: Set<String> = ["all", "protoMessageName", "with", "init", "self", "Type", "Protocol"]
            for ext in scope {
                var name = ext.field.propertyName
                while !taken.insert(name).inserted { name += "_p" }
                ext.field.propertyName = name
            }
        }
        nameExtensionEnums()
    }

    /// Names each file's extensions enum from its path (`shop/order-v2.proto` in package
    /// `shop` → `Shop_ShopOrderV2Extensions`), so files of one package in different folders
    /// differ even when protoc runs once per file; within one run, never a name a top-level
    /// type or another file's enum has.
    private func nameExtensionEnums() {
        var taken = Set(messages.values.map(\.swiftName)).union(enums.values.map(\.swiftName))
        for file in files.values.sorted(by: { $0.descriptor.name < $1.descriptor.name }) where file.declaresExtensions {
            let path = file.descriptor.name.split(separator: ".").dropLast().joined(separator: ".")
            var name = file.typePrefix + SwiftNaming.identifierWords(path) + "Extensions"
            if name.first!.isNumber { name = "File" + name }
            while taken.contains(name) { name += "_p" }
            taken.insert(name)
            file.extensionsEnumName = name
        }
    }

    /// An `extend` field: its type resolved like a message field's, and the message it extends.
    private func resolveExtension(_ descriptor: FieldDescriptorProto, scope: String, features: Features) throws -> ExtensionInfo {
        let fullName = scope.isEmpty ? descriptor.name : scope + "." + descriptor.name
        guard let type = FieldType(rawValue: descriptor.type) else {
            throw GeneratorError("\(fullName): unknown field type \(descriptor.type)")
        }
        guard let extendee = messages[descriptor.extendee] else {
            throw GeneratorError("\(fullName): unknown extended message \(descriptor.extendee)")
        }
        var features = features.applying(descriptor.options.features)
        if let packed = descriptor.options.packed { features.packed = packed }
        let field = FieldInfo(descriptor: descriptor, type: type, features: features)
        try resolveType(of: field, in: fullName)
        field.isGroup = field.message != nil && (type == .group || features.delimited)
        field.propertyName = SwiftNaming.lowerCamelCase(descriptor.name)
        return ExtensionInfo(field: field, extendee: extendee, fullName: fullName)
    }

    private func register(
        _ descriptor: DescriptorProto, scope: String, swiftScope: String, parent: MessageInfo?,
        features: Features, file: FileInfo, path: [Int32]
    ) -> MessageInfo {
        let fullName = scope + "." + descriptor.name
        let swiftName =
            parent == nil
            ? SwiftNaming.typeName(descriptor.name, prefix: swiftScope)
            : swiftScope + "." + SwiftNaming.typeName(descriptor.name, prefix: "")
        let message = MessageInfo(
            descriptor: descriptor, fullName: fullName, swiftName: swiftName,
            features: features.applying(descriptor.options.features), file: file
        )
        message.path = path
        message.doc = file.descriptor.comments.docLines(path)
        messages[fullName] = message
        for (index, nested) in descriptor.nestedTypes.enumerated() {
            message.nestedMessages.append(
                register(
                    nested, scope: fullName, swiftScope: swiftName, parent: message, features: message.features, file: file,
                    path: path + [3, Int32(index)])
            )
        }
        for (index, enumeration) in descriptor.enumTypes.enumerated() {
            message.nestedEnums.append(
                register(
                    enumeration, scope: fullName, swiftScope: swiftName + ".", features: message.features, file: file,
                    path: path + [4, Int32(index)]))
        }
        return message
    }

    private func register(
        _ descriptor: EnumDescriptorProto, scope: String, swiftScope: String, features: Features, file: FileInfo, path: [Int32]
    ) -> EnumInfo {
        let fullName = scope + "." + descriptor.name
        let info = EnumInfo(
            descriptor: descriptor, fullName: fullName,
            swiftName: SwiftNaming.typeName(descriptor.name, prefix: swiftScope),
            closed: features.applying(descriptor.options.features).closedEnums
        )
        info.doc = file.descriptor.comments.docLines(path)
        for (index, value) in descriptor.values.enumerated() {
            let lines = file.descriptor.comments.docLines(path + [2, Int32(index)])
            if !lines.isEmpty { info.valueDocs[value.name] = lines }
        }
        enums[fullName] = info
        return info
    }

    private func resolveFields(of message: MessageInfo) throws {
        guard !message.fieldsResolved else { return }
        message.fieldsResolved = true
        let descriptor = message.descriptor
        let edition = message.file.edition
        // proto3 `optional` fields sit in synthetic oneofs that are not real oneofs.
        let syntheticOneofs = Set(descriptor.fields.filter(\.proto3Optional).compactMap(\.oneofIndex))
        var oneofs: [Int32: OneofInfo] = [:]
        for (index, name) in descriptor.oneofNames.enumerated() where !syntheticOneofs.contains(Int32(index)) {
            let oneof = OneofInfo(name: name)
            oneofs[Int32(index)] = oneof
            message.oneofs.append(oneof)
        }
        for (fieldIndex, fieldDescriptor) in descriptor.fields.enumerated() {
            guard let type = FieldType(rawValue: fieldDescriptor.type) else {
                throw GeneratorError("\(message.fullName).\(fieldDescriptor.name): unknown field type \(fieldDescriptor.type)")
            }
            var features = message.features
            if let index = fieldDescriptor.oneofIndex, !syntheticOneofs.contains(index) {
                features = features.applying(descriptor.oneofFeatures[Int(index)])
            }
            features = features.applying(fieldDescriptor.options.features)
            if let packed = fieldDescriptor.options.packed, edition < .edition2023 { features.packed = packed }
            if edition == .proto2, fieldDescriptor.label == .required { features.presence = .required }
            if edition == .proto3, fieldDescriptor.proto3Optional { features.presence = .explicit }

            let field = FieldInfo(descriptor: fieldDescriptor, type: type, features: features)
            field.doc = message.file.descriptor.comments.docLines(message.path + [2, Int32(fieldIndex)])
            try resolveType(of: field, in: "\(message.fullName).\(fieldDescriptor.name)")
            if let target = field.message {
                if target.descriptor.options.mapEntry {
                    try resolveFields(of: target)
                    target.fields[0].isMapKey = true
                    field.mapEntry = target
                } else if type == .group || features.delimited {
                    field.isGroup = true
                }
            }
            if let index = fieldDescriptor.oneofIndex, let oneof = oneofs[index] {
                field.oneof = oneof
                oneof.fields.append(field)
            }
            message.fields.append(field)
        }
        message.fields.sort { $0.number < $1.number }
        assignPropertyNames(of: message)
    }

    /// Gives every field, its `has`/`clear` accessors and every oneof a Swift name no other
    /// member of the message has: fields in number order first, then oneofs; a name taken
    /// gets `_p` until it is free (`has_foo` beside an optional `foo`, a oneof named like one
    /// of its fields, fields that differ only in underscores).
    private func assignPropertyNames(of message: MessageInfo) {
        var taken = SwiftNaming.reservedMemberNames
        func claim(_ base: String, accessors: (String) -> [String]) -> String {
            var name = base
            while ([name] + accessors(name)).contains(where: taken.contains) { name += "_p" }
            taken.insert(name)
            taken.formUnion(accessors(name))
            return name
        }
        for field in message.fields {
            let words = SwiftNaming.lowerCamelCase(field.name)
            let base = words.allSatisfy { $0 == "_" } ? "field\(field.number)" : words
            field.propertyName = claim(base) { name in
                guard field.hasPresence else { return [] }
                let capitalized = name.prefix(1).uppercased() + name.dropFirst()
                return ["has" + capitalized, "clear" + capitalized, "_" + name]
            }
        }
        for oneof in message.oneofs {
            oneof.propertyName = claim(SwiftNaming.lowerCamelCase(oneof.name)) { _ in [] }
        }
        // Oneof enums share the message's type scope with its nested types and each other.
        var takenTypes = Set(message.nestedMessages.map(\.localName)).union(message.nestedEnums.map(\.localName))
        for oneof in message.oneofs {
            var name = "OneOf_" + SwiftNaming.upperCamelCase(oneof.name)
            while !takenTypes.insert(name).inserted { name += "_p" }
            oneof.enumName = name
        }
    }

    /// Points a message- or enum-typed field at the type its descriptor names.
    private func resolveType(of field: FieldInfo, in place: String) throws {
        let typeName = field.descriptor.typeName
        switch field.type {
        case .message, .group:
            guard let target = messages[typeName] else { throw GeneratorError("\(place): unknown type \(typeName)") }
            field.message = target
        case .enumeration:
            guard let target = enums[typeName] else { throw GeneratorError("\(place): unknown enum \(typeName)") }
            field.enumeration = target
        default:
            break
        }
    }

    /// Singular message fields whose type contains, directly or not, the message that holds
    /// them, are boxed: a Swift struct cannot contain itself.
    private func markIndirectFields(of message: MessageInfo) {
        for field in message.fields where !field.isRepeated {
            guard let target = field.message, reaches(from: target, to: message) else { continue }
            field.isIndirect = true
            field.oneof?.isIndirect = true
        }
    }

    private var reachability: [String: Set<String>] = [:]

    /// Whether `start` holds `goal` through singular message fields.
    private func reaches(from start: MessageInfo, to goal: MessageInfo) -> Bool {
        if let known = reachability[start.fullName] { return known.contains(goal.fullName) }
        var seen: Set<String> = [start.fullName]
        var pending = [start]
        while let next = pending.popLast() {
            for field in next.fields where !field.isRepeated {
                guard let target = field.message, seen.insert(target.fullName).inserted else { continue }
                pending.append(target)
            }
        }
        reachability[start.fullName] = seen
        return seen.contains(goal.fullName)
    }

    /// Whether a message, or any message it holds, has required fields to check.
    func needsInitializationCheck(_ message: MessageInfo) -> Bool {
        if let known = message.needsInitializationCheck { return known }
        message.needsInitializationCheck = false  // breaks cycles; a cycle adds nothing new
        let result = message.fields.contains { field in
            field.presence == .required
                || (field.mapEntry?.fields.last?.message).map(needsInitializationCheck) ?? false
                || (field.mapEntry == nil && field.message.map(needsInitializationCheck) ?? false)
        }
        message.needsInitializationCheck = result
        return result
    }
}

/// A .proto file and the edition-level facts of its contents.
final class FileInfo {
    let descriptor: FileDescriptorProto
    let edition: Edition
    let features: Features
    let typePrefix: String
    var messages: [MessageInfo] = []
    var enums: [EnumInfo] = []
    /// The file's top-level `extend` fields.
    var extensions: [ExtensionInfo] = []
    /// The enum that lists the file's extensions, unique in the protoc run (set by the model).
    var extensionsEnumName = ""

    /// Whether the file or any message in it declares an extension.
    var declaresExtensions: Bool {
        var pending = messages
        while let message = pending.popLast() {
            if !message.descriptor.extensions.isEmpty { return true }
            pending += message.nestedMessages
        }
        return !descriptor.extensions.isEmpty
    }

    init(_ descriptor: FileDescriptorProto) throws {
        self.descriptor = descriptor
        if let number = descriptor.edition, descriptor.syntax == "editions" {
            guard let edition = Edition(rawValue: number) else {
                throw GeneratorError("\(descriptor.name): edition \(number) is not supported (2023 and 2024 are)")
            }
            self.edition = edition
        } else {
            edition = descriptor.syntax == "proto3" ? .proto3 : .proto2
        }
        features = Features.defaults(for: edition).applying(descriptor.options.features)
        typePrefix = SwiftNaming.typePrefix(package: descriptor.package, swiftPrefix: descriptor.options.swiftPrefix)
    }
}

final class MessageInfo {
    let descriptor: DescriptorProto
    /// `.package.Outer.Inner`.
    let fullName: String
    /// `Package_Outer.Inner`.
    let swiftName: String
    let features: Features
    unowned let file: FileInfo
    var nestedMessages: [MessageInfo] = []
    var nestedEnums: [EnumInfo] = []
    /// Fields in field-number order.
    var fields: [FieldInfo] = []
    var oneofs: [OneofInfo] = []
    /// The `extend` fields declared inside this message.
    var extensions: [ExtensionInfo] = []
    var needsInitializationCheck: Bool?
    var fieldsResolved = false
    /// Where the message sits in its file's descriptor (`SourceCodeInfo`'s path).
    var path: [Int32] = []
    /// The `.proto` comment as doc-comment lines; empty when there is none.
    var doc: [String] = []

    init(descriptor: DescriptorProto, fullName: String, swiftName: String, features: Features, file: FileInfo) {
        self.descriptor = descriptor
        self.fullName = fullName
        self.swiftName = swiftName
        self.features = features
        self.file = file
    }

    /// The name without the leading dot, as `protoMessageName` reports it.
    var protoName: String { String(fullName.dropFirst()) }
    /// The last component of `swiftName`, as declared.
    var localName: String { String(swiftName.split(separator: ".").last!) }
}

final class EnumInfo {
    let descriptor: EnumDescriptorProto
    let fullName: String
    let swiftName: String
    let closed: Bool
    /// The `.proto` comment as doc-comment lines; empty when there is none.
    var doc: [String] = []
    /// Each value's `.proto` comment as doc-comment lines, by the value's name.
    var valueDocs: [String: [String]] = [:]

    init(descriptor: EnumDescriptorProto, fullName: String, swiftName: String, closed: Bool) {
        self.descriptor = descriptor
        self.fullName = fullName
        self.swiftName = swiftName
        self.closed = closed
    }

    var localName: String { String(swiftName.split(separator: ".").last!) }

    /// One value of the enum as Swift spells it.
    struct Case {
        let protoName: String
        /// The Swift case, or for an alias the static property naming its primary case.
        let caseName: String
        let number: Int32
        /// A value with an earlier value's number.
        let isAlias: Bool
        /// Whether the generated enum declares `caseName` for this value: an alias whose
        /// Swift name an earlier value already has is only a JSON/text name of that value
        /// (`MOO`, `moo` and `bAz` after `ALIAS_BAZ`: the first alias wins).
        let declaresName: Bool
    }

    /// The Swift case of each value, every Swift name declared once.
    private(set) lazy var cases: [Case] = {
        var taken = SwiftNaming.reservedEnumMemberNames
        var primaries: [Int32: String] = [:]
        return descriptor.values.map { value in
            var name = SwiftNaming.enumCaseName(value.name, enumName: descriptor.name)
            if let primary = primaries[value.number] {
                let declares = taken.insert(name).inserted
                return Case(
                    protoName: value.name, caseName: declares ? name : primary, number: value.number,
                    isAlias: true, declaresName: declares)
            }
            while !taken.insert(name).inserted { name += "_p" }
            primaries[value.number] = name
            return Case(protoName: value.name, caseName: name, number: value.number, isAlias: false, declaresName: true)
        }
    }()
}

/// A field declared by `extend`, outside the message it extends.
final class ExtensionInfo {
    let field: FieldInfo
    let extendee: MessageInfo
    /// `package.Scope.name`, as JSON and text format write it in brackets.
    let fullName: String

    init(field: FieldInfo, extendee: MessageInfo, fullName: String) {
        self.field = field
        self.extendee = extendee
        self.fullName = fullName
    }

    /// Why the typed accessors cannot serve this extension, if they cannot: its value then
    /// stays an unknown field, which still round-trips.
    var unsupportedReason: String? {
        if field.isGroup { return "group-encoded extensions" }
        if extendee.descriptor.options.messageSetWireFormat { return "MessageSet extensions" }
        return nil
    }
}

final class OneofInfo {
    let name: String
    var fields: [FieldInfo] = []
    var isIndirect = false

    init(name: String) {
        self.name = name
    }

    /// The Swift property, unique in its message (set by the model).
    var propertyName = ""
    /// The Swift enum of its cases, unique among the message's nested types (set by the model).
    var enumName = ""
}

final class FieldInfo {
    let descriptor: FieldDescriptorProto
    let type: FieldType
    let features: Features
    var message: MessageInfo?
    var enumeration: EnumInfo?
    var mapEntry: MessageInfo?
    var oneof: OneofInfo?
    var isGroup = false
    var isIndirect = false
    /// The key of a map entry: a `string` key is a `ProtoStringKey`.
    var isMapKey = false
    /// The `.proto` comment as doc-comment lines; empty when there is none.
    var doc: [String] = []

    init(descriptor: FieldDescriptorProto, type: FieldType, features: Features) {
        self.descriptor = descriptor
        self.type = type
        self.features = features
    }

    var number: Int { Int(descriptor.number) }
    var name: String { descriptor.name }
    var isRepeated: Bool { descriptor.label == .repeated }
    /// The Swift property, unique in its message (set by the model).
    var propertyName = ""

    /// `startTime` → `StartTime`, for `hasStartTime` and `clearStartTime()`.
    var capitalizedName: String {
        let property = propertyName
        return property.prefix(1).uppercased() + property.dropFirst()
    }

    /// How presence is tracked: repeated fields and oneof members are handled apart.
    var presence: Features.Presence {
        if type == .message || type == .group { return features.presence == .required ? .required : .explicit }
        return features.presence
    }

    /// Stored as an optional (`_name: T?`) with `has`/`clear` accessors.
    var hasPresence: Bool { !isRepeated && oneof == nil && presence != .implicit }

    /// Packed when repeated, packable and the features say so.
    var isPacked: Bool { isRepeated && type.isPackable && features.packed }
}

struct GeneratorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
