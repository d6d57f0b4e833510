/// Choices for writing text format.
public struct TextFormatEncodingOptions: Sendable {
    /// Write fields this schema does not know as `number: value`. Default false.
    public var printUnknownFields = false
    /// Write everything on one line, fields separated by spaces. Default false: one field a
    /// line, nested messages indented by two spaces.
    public var singleLine = false
    /// The message types an `Any` may hold; those print expanded, as
    /// `[type.googleapis.com/pkg.Name] { … }`. The well-known types by default.
    public var typeRegistry = MessageTypeRegistry()
    /// The extensions to write as `[full.name]: value`; others print as unknown fields.
    public var extensions = ExtensionMap()

    /// The defaults: one field a line, unknown fields not printed, well-known types only, no extensions.
    public init() {}
}

/// Choices for reading text format.
public struct TextFormatDecodingOptions: Sendable {
    /// How deeply messages may nest. Default 100, as for binary.
    public var recursionLimit = 100
    /// The message types an expanded `Any` may name, beyond the well-known types.
    public var typeRegistry = MessageTypeRegistry()
    /// The extensions `[full.name]` may name.
    public var extensions = ExtensionMap()

    /// The defaults: nesting up to 100, well-known types only, no extensions.
    public init() {}
}

/// Why text could not be read as a message: what was wrong, and where.
public struct TextFormatDecodingError: Error, Hashable, CustomStringConvertible {
    /// The message being read, such as `pitlane.test.proto3.AllTypes`.
    public var messageName: String
    /// What was wrong, naming the field or token.
    public var reason: String
    /// Line and column of the offending token, both from 1.
    public var line: Int
    /// The column of the offending token, counted in UTF-8 bytes from 1.
    public var column: Int

    /// The message name, the reason and the `line:column` position, on one line.
    public var description: String {
        "cannot read \(messageName.isEmpty ? "message" : messageName) from text format: \(reason) at \(line):\(column)"
    }
}

extension Message {
    /// The message in protobuf text format, the form `protoc --decode` prints:
    ///
    /// ```swift
    /// print(race.textFormatString())
    /// // name: "Duck Pond Dash"
    /// // laps: 12
    /// ```
    ///
    /// Strings and bytes are escaped to printable ASCII (octal for other bytes), map entries
    /// are sorted by key, and an `Any` whose type the registry knows prints expanded.
    public func textFormatString(options: TextFormatEncodingOptions = .init()) -> String {
        var writer = TextFormatWriter(options: options)
        writer.writeMessageBody(self)
        return writer.text
    }

    /// Reads a message from text format: `#` comments, `"…"` and `'…'` strings with C
    /// escapes, `{}` or `<>` around messages, `[a, b]` lists, enums by name or number, and
    /// expanded `Any`s.
    ///
    /// - Throws: `TextFormatDecodingError` with the line and column of the problem; also
    ///   when required fields are missing and `partial` is false.
    public init(textFormatString text: String, partial: Bool = false, options: TextFormatDecodingOptions = .init()) throws {
        self.init()
        var reader = TextFormatReader(Array(text.utf8), options: options)
        do {
            try reader.readMessageBody(into: &self, terminator: nil)
            if !partial && !isInitialized { throw reader.error("required fields are missing") }
        } catch var failure as TextFormatDecodingError {
            failure.messageName = Self.protoMessageName
            throw failure
        }
    }

    /// The message's type and its fields in text format, on one line, unknown fields
    /// included: `pitlane.Race { name: "Duck Pond Dash" laps: 12 }`.
    public var debugDescription: String {
        var options = TextFormatEncodingOptions()
        options.singleLine = true
        options.printUnknownFields = true
        let fields = textFormatString(options: options)
        return Self.protoMessageName + (fields.isEmpty ? " {}" : " { \(fields) }")
    }
}
