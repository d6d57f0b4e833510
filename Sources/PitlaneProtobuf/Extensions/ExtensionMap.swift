/// The extensions JSON and text format may name, by extended message and full name.
///
/// ```swift
/// var options = JSONDecodingOptions()
/// options.extensions = ExtensionMap(TestMessages_Extensions.all)
/// let message = try TestAllTypesProto2(jsonString: #"{"[pkg.extension_int32]": 1}"#, options: options)
/// ```
public struct ExtensionMap: Sendable {
    /// Extended message name → extensions of it, in field-number order.
    private var byMessage: [String: [any AnyMessageExtension]] = [:]

    /// A map of `extensions`; of two with the same extended message and field number, the later one stays.
    public init(_ extensions: [any AnyMessageExtension] = []) {
        for ext in extensions { add(ext) }
    }

    /// Adds `ext`, replacing an extension of the same message with the same field number.
    public mutating func add(_ ext: any AnyMessageExtension) {
        var list = byMessage[ext.extendedMessageName, default: []]
        list.removeAll { $0.fieldNumber == ext.fieldNumber }
        list.append(ext)
        list.sort { $0.fieldNumber < $1.fieldNumber }
        byMessage[ext.extendedMessageName] = list
    }

    /// The extensions of the message named `messageName`.
    public func extensions(of messageName: String) -> [any AnyMessageExtension] {
        byMessage[messageName] ?? []
    }

    /// The extension of `messageName` called `fullName`, as `[full.name]` spells it.
    public func `extension`(of messageName: String, named fullName: String) -> (any AnyMessageExtension)? {
        byMessage[messageName]?.first { $0.fullName == fullName }
    }
}
