import PitlaneProtobuf

// The parts of google/protobuf/descriptor.proto and compiler/plugin.proto the generator
// reads, with their field numbers. Everything else is skipped.

/// `google.protobuf.FeatureSet`, as written at one level; nil means "inherit".
struct FeatureSet: WireParsable, Equatable {
    var fieldPresence: Int32?
    var enumType: Int32?
    var repeatedFieldEncoding: Int32?
    var utf8Validation: Int32?
    var messageEncoding: Int32?
    var jsonFormat: Int32?

    init() {}

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: fieldPresence = try reader.int32()
            case 2: enumType = try reader.int32()
            case 3: repeatedFieldEncoding = try reader.int32()
            case 4: utf8Validation = try reader.int32()
            case 5: messageEncoding = try reader.int32()
            case 6: jsonFormat = try reader.int32()
            default: return false
            }
            return true
        }
    }
}

/// Options messages: only `features` (and a few legacy options) matter here.
struct Options: WireParsable {
    var features = FeatureSet()
    /// FieldOptions.packed (2).
    var packed: Bool?
    /// MessageOptions.map_entry (7).
    var mapEntry = false
    /// MessageOptions.message_set_wire_format (1).
    var messageSetWireFormat = false
    /// FileOptions.swift_prefix (39).
    var swiftPrefix: String?

    init() {}

    /// Options messages put `features` at different numbers; the caller says which.
    init(parsing buffer: UnsafeRawBufferPointer, featuresField: Int, kind: Kind) throws {
        try forEachField(in: buffer) { tag, reader in
            switch (kind, tag.fieldNumber) {
            case (_, featuresField): features = try reader.message(FeatureSet.self)
            case (.field, 2): packed = try reader.bool()
            case (.message, 7): mapEntry = try reader.bool()
            case (.message, 1): messageSetWireFormat = try reader.bool()
            case (.file, 39): swiftPrefix = try reader.string()
            default: return false
            }
            return true
        }
    }

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try self.init(parsing: buffer, featuresField: 1, kind: .other)
    }

    enum Kind { case file, message, field, enumeration, other }
}

struct FileDescriptorProto: WireParsable {
    var name = ""
    var package = ""
    var dependencies: [String] = []
    var messageTypes: [DescriptorProto] = []
    var enumTypes: [EnumDescriptorProto] = []
    var services: [ServiceDescriptorProto] = []
    var extensions: [FieldDescriptorProto] = []
    var options = Options()
    var syntax = ""
    var edition: Int32?
    /// The file's comments, for the generated code's doc comments.
    var comments = SourceComments()
    /// The descriptor as protoc sent it, for server reflection.
    var serialized: [UInt8] = []

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        serialized = Array(buffer)
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: name = try reader.string()
            case 2: package = try reader.string()
            case 3: dependencies.append(try reader.string())
            case 4: messageTypes.append(try reader.message(DescriptorProto.self))
            case 5: enumTypes.append(try reader.message(EnumDescriptorProto.self))
            case 6: services.append(try reader.message(ServiceDescriptorProto.self))
            case 7: extensions.append(try reader.message(FieldDescriptorProto.self))
            case 8: options = try Options(parsing: reader.readLengthDelimited(), featuresField: 50, kind: .file)
            case 9: comments = try SourceComments(parsing: reader.readLengthDelimited())
            case 12: syntax = try reader.string()
            case 14: edition = try reader.int32()
            default: return false
            }
            return true
        }
    }
}

struct DescriptorProto: WireParsable {
    var name = ""
    var fields: [FieldDescriptorProto] = []
    var nestedTypes: [DescriptorProto] = []
    var enumTypes: [EnumDescriptorProto] = []
    var extensions: [FieldDescriptorProto] = []
    var oneofNames: [String] = []
    var oneofFeatures: [FeatureSet] = []
    var options = Options()

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: name = try reader.string()
            case 2: fields.append(try reader.message(FieldDescriptorProto.self))
            case 3: nestedTypes.append(try reader.message(DescriptorProto.self))
            case 4: enumTypes.append(try reader.message(EnumDescriptorProto.self))
            case 6: extensions.append(try reader.message(FieldDescriptorProto.self))
            case 7: options = try Options(parsing: reader.readLengthDelimited(), featuresField: 12, kind: .message)
            case 8:
                let oneof = try reader.message(OneofDescriptorProto.self)
                oneofNames.append(oneof.name)
                oneofFeatures.append(oneof.features)
            default: return false
            }
            return true
        }
    }
}

struct OneofDescriptorProto: WireParsable {
    var name = ""
    var features = FeatureSet()

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: name = try reader.string()
            case 2: features = try Options(parsing: reader.readLengthDelimited()).features
            default: return false
            }
            return true
        }
    }
}

struct FieldDescriptorProto: WireParsable {
    enum Label: Int32 {
        case optional = 1
        case required = 2
        case repeated = 3
    }

    var name = ""
    var number: Int32 = 0
    var label = Label.optional
    var type: Int32 = 0
    var typeName = ""
    var extendee = ""
    var defaultValue: String?
    var oneofIndex: Int32?
    var jsonName = ""
    var options = Options()
    var proto3Optional = false

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: name = try reader.string()
            case 2: extendee = try reader.string()
            case 3: number = try reader.int32()
            case 4: label = Label(rawValue: try reader.int32()) ?? .optional
            case 5: type = try reader.int32()
            case 6: typeName = try reader.string()
            case 7: defaultValue = try reader.string()
            case 8: options = try Options(parsing: reader.readLengthDelimited(), featuresField: 21, kind: .field)
            case 9: oneofIndex = try reader.int32()
            case 10: jsonName = try reader.string()
            case 17: proto3Optional = try reader.bool()
            default: return false
            }
            return true
        }
    }
}

struct EnumDescriptorProto: WireParsable {
    var name = ""
    var values: [(name: String, number: Int32)] = []
    var options = Options()

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: name = try reader.string()
            case 2:
                var valueName = ""
                var number: Int32 = 0
                try forEachField(in: reader.readLengthDelimited()) { tag, reader in
                    switch tag.fieldNumber {
                    case 1: valueName = try reader.string()
                    case 2: number = try reader.int32()
                    default: return false
                    }
                    return true
                }
                values.append((valueName, number))
            case 3: options = try Options(parsing: reader.readLengthDelimited(), featuresField: 7, kind: .enumeration)
            default: return false
            }
            return true
        }
    }
}

struct ServiceDescriptorProto: WireParsable {
    var name = ""
    var methods: [MethodDescriptorProto] = []

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: name = try reader.string()
            case 2: methods.append(try reader.message(MethodDescriptorProto.self))
            default: return false
            }
            return true
        }
    }
}

struct MethodDescriptorProto: WireParsable {
    var name = ""
    var inputType = ""
    var outputType = ""
    var clientStreaming = false
    var serverStreaming = false
    /// MethodOptions.idempotency_level (34): 0 unknown, 1 NO_SIDE_EFFECTS, 2 IDEMPOTENT.
    var idempotencyLevel: Int32 = 0

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: name = try reader.string()
            case 2: inputType = try reader.string()
            case 3: outputType = try reader.string()
            case 4:
                try forEachField(in: reader.readLengthDelimited()) { tag, options in
                    guard tag.fieldNumber == 34 else { return false }
                    idempotencyLevel = try options.int32()
                    return true
                }
            case 5: clientStreaming = try reader.bool()
            case 6: serverStreaming = try reader.bool()
            default: return false
            }
            return true
        }
    }
}

/// `google.protobuf.compiler.CodeGeneratorRequest`.
struct CodeGeneratorRequest: WireParsable {
    var filesToGenerate: [String] = []
    var parameter = ""
    var protoFiles: [FileDescriptorProto] = []

    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            switch tag.fieldNumber {
            case 1: filesToGenerate.append(try reader.string())
            case 2: parameter = try reader.string()
            case 15: protoFiles.append(try reader.message(FileDescriptorProto.self))
            default: return false
            }
            return true
        }
    }
}

/// `google.protobuf.compiler.CodeGeneratorResponse`, written by hand in wire format.
struct CodeGeneratorResponse {
    var error: String?
    var files: [(name: String, content: String)] = []
    /// FEATURE_PROTO3_OPTIONAL | FEATURE_SUPPORTS_EDITIONS.
    var supportedFeatures: UInt64 = 3
    var minimumEdition: Int32 = Edition.proto2.rawValue
    var maximumEdition: Int32 = Edition.edition2024.rawValue

    func serializedBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        func varint(_ value: UInt64) {
            var rest = value
            while rest >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
                rest >>= 7
            }
            bytes.append(UInt8(rest))
        }
        func string(_ field: UInt64, _ value: String) {
            varint(field << 3 | 2)
            varint(UInt64(value.utf8.count))
            bytes.append(contentsOf: value.utf8)
        }
        if let error { string(1, error) }
        varint(2 << 3)
        varint(supportedFeatures)
        varint(3 << 3)
        varint(UInt64(minimumEdition))
        varint(4 << 3)
        varint(UInt64(maximumEdition))
        for file in files {
            var body: [UInt8] = []
            swap(&body, &bytes)
            string(1, file.name)
            string(15, file.content)
            swap(&body, &bytes)
            varint(15 << 3 | 2)
            varint(UInt64(body.count))
            bytes.append(contentsOf: body)
        }
        return bytes
    }
}

/// `google.protobuf.Edition` values the generator handles.
enum Edition: Int32, Comparable {
    case proto2 = 998
    case proto3 = 999
    case edition2023 = 1000
    case edition2024 = 1001

    static func < (lhs: Edition, rhs: Edition) -> Bool { lhs.rawValue < rhs.rawValue }
}
