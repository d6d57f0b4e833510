/// Reads protobuf text format.
///
/// Generated `decodeTextField(named:from:)` methods call it field by field; values are read
/// by each field's codec (`ProtoFieldCodec.readText`). A singular field or a oneof given
/// twice in one message is an error, as in C++ and Python.
public struct TextFormatReader {
    /// How to read: recursion limit, the types an expanded `Any` may name, extensions.
    public let options: TextFormatDecodingOptions
    var scanner: TextFormatScanner
    var depth = 0
    /// The singular fields (by number) and oneofs (by -1 - index) set so far in each message
    /// being read, innermost last.
    var claimed: [Set<Int>] = []
    /// Where the name of the field being read starts, for errors about the field as a whole.
    var fieldStart = 0

    init(_ bytes: [UInt8], options: TextFormatDecodingOptions) {
        scanner = TextFormatScanner(bytes)
        self.options = options
    }

    /// An error at `offset`, or at the reader's position.
    public func error(_ reason: String, at offset: Int? = nil) -> TextFormatDecodingError {
        let (line, column) = scanner.position(of: offset ?? scanner.index)
        return TextFormatDecodingError(messageName: "", reason: reason, line: line, column: column)
    }

    /// Where the next token starts, after whitespace and comments.
    mutating func tokenStart() -> Int {
        _ = scanner.peek()
        return scanner.index
    }

    // MARK: Messages

    /// Reads fields into `message` until `terminator` (`}` or `>`), or the end of the text
    /// when it is nil.
    mutating func readMessageBody<M: Message>(into message: inout M, terminator: UInt8?) throws {
        depth += 1
        defer { depth -= 1 }
        guard depth <= options.recursionLimit else {
            throw error("messages nest deeper than the recursion limit (\(options.recursionLimit))")
        }
        claimed.append([])
        defer { claimed.removeLast() }
        while true {
            guard let next = scanner.peek() else {
                guard let terminator else { return }
                throw error("a message is missing its closing \"\(Character(Unicode.Scalar(terminator)))\"")
            }
            let start = scanner.index
            fieldStart = start
            if let terminator, next == terminator {
                _ = scanner.consume(terminator)
                return
            }
            if scanner.consume(UInt8(ascii: "[")) {
                let name = try scanning { (scanner: inout TextFormatScanner) throws(ScanError) in try scanner.bracketedName() }
                if var any = message as? Google_Protobuf_Any, name.contains("/") {
                    try readExpandedAny(url: name, into: &any, at: start)
                    message = any as! M
                } else if let ext = options.extensions.extension(of: M.protoMessageName, named: name) {
                    try ext.readText(from: &self, into: &message.unknownFields)
                } else {
                    throw error("no extension [\(name)] of \(M.protoMessageName) is known", at: start)
                }
            } else {
                guard let name = scanner.identifier() else { throw error("expected a field name", at: start) }
                guard try message.decodeTextField(named: name, from: &self) else {
                    throw error("\(M.protoMessageName) has no field named \"\(name)\"", at: start)
                }
            }
            if !scanner.consume(UInt8(ascii: ",")) { _ = scanner.consume(UInt8(ascii: ";")) }
        }
    }

    /// A message value: `{ … }` or `< … >`.
    public mutating func readMessage<M: Message>(into message: inout M) throws {
        if scanner.consume(UInt8(ascii: "{")) {
            try readMessageBody(into: &message, terminator: UInt8(ascii: "}"))
        } else if scanner.consume(UInt8(ascii: "<")) {
            try readMessageBody(into: &message, terminator: UInt8(ascii: ">"))
        } else {
            throw error("expected \"{\" or \"<\" to open a message")
        }
    }

    /// `[type.googleapis.com/pkg.Name] { … }` inside an `Any`: the message, packed. This sets
    /// the `Any`'s two fields, so it may not follow a non-empty `type_url` or `value`, nor
    /// another `[…]` (as in C++), and neither field may follow it (see `claimExpandedAny`).
    private mutating func readExpandedAny(url: String, into any: inout Google_Protobuf_Any, at start: Int) throws {
        guard any.typeURL.isEmpty && any.value.isEmpty else {
            throw error("[\(url)] comes after this Any's type_url, value or another [type URL]", at: start)
        }
        let typeName = String(url[url.index(after: url.lastIndex(of: "/")!)...])
        guard let type = options.typeRegistry.type(named: typeName) else {
            throw error("Any holds \(typeName), which the type registry does not know", at: start)
        }
        _ = scanner.consume(UInt8(ascii: ":"))
        func read<T: Message>(_ type: T.Type) throws -> [UInt8] {
            var message = T()
            try readMessage(into: &message)
            return try message.serializedBytes(partial: true, options: EncodingOptions(deterministic: true))
        }
        any.value = try read(type)
        any.typeURL = url
        claimExpandedAny(hasValue: !any.value.isEmpty)
    }

    /// Marks the fields an expanded `Any` set as claimed in the message being read, so that a
    /// later `type_url` (field 1), or a later `value` (field 2) once the packed message has
    /// bytes, is "given twice": C++ and Python count a proto3 field as set when it is not
    /// empty, and reject exactly these. Inserting, unlike `claim`, does not fail for a field
    /// given before: an empty `type_url: ""` ahead of the expansion stays valid, as there.
    private mutating func claimExpandedAny(hasValue: Bool) {
        claimed[claimed.count - 1].insert(1)
        if hasValue { claimed[claimed.count - 1].insert(2) }
    }

    private mutating func scanning<T>(_ body: (inout TextFormatScanner) throws(ScanError) -> T) throws -> T {
        do {
            return try body(&scanner)
        } catch {
            throw self.error(error.reason, at: error.offset)
        }
    }

    // MARK: Fields, for generated code

    /// Records that a singular field (`id` its number) or a oneof (`id` = -1 - its index)
    /// is set in the message being read; the second time is an error.
    public mutating func claim(_ id: Int, _ name: String) throws {
        guard claimed[claimed.count - 1].insert(id).inserted else {
            throw error(id < 0 ? "a second member of oneof \"\(name)\"" : "\"\(name)\" is given twice", at: fieldStart)
        }
    }

    /// Reads `: value`, or `{ … }` (the colon optional) for a message.
    @inlinable
    public mutating func readField<C: ProtoFieldCodec>(_ codec: C.Type) throws -> C.Value {
        try separator(optional: C.isTextMessage)
        return try C.readText(from: &self)
    }

    /// Reads one element (`: value`) or a list of them (`: [a, b]`), appending.
    @inlinable
    public mutating func readRepeatedField<C: ProtoFieldCodec>(_ codec: C.Type, into values: inout [C.Value]) throws {
        try separator(optional: C.isTextMessage)
        try readOneOrList { reader in values.append(try C.readText(from: &reader)) }
    }

    /// Reads one entry (`{ key: … value: … }`) or a list of them, adding to `map`; a
    /// missing key or value is the type's default.
    public mutating func readMapField<K: ProtoMapKeyCodec, V: ProtoFieldCodec>(
        _ key: K.Type, _ value: V.Type, into map: inout [K.Value: V.Value]
    ) throws {
        try separator(optional: true)
        try readOneOrList { reader in
            var entry = MapEntry<K, V>()
            try reader.readMessage(into: &entry)
            map[entry.key] = entry.value
        }
    }

    @usableFromInline
    mutating func separator(optional: Bool) throws {
        if !scanner.consume(UInt8(ascii: ":")) && !optional { throw error("expected \":\" after the field name") }
    }

    @usableFromInline
    mutating func readOneOrList(_ readElement: (inout TextFormatReader) throws -> Void) throws {
        guard scanner.consume(UInt8(ascii: "[")) else { return try readElement(&self) }
        if scanner.consume(UInt8(ascii: "]")) { return }
        repeat {
            try readElement(&self)
        } while scanner.consume(UInt8(ascii: ","))
        guard scanner.consume(UInt8(ascii: "]")) else { throw error("expected \",\" or \"]\" in a list") }
    }

    // MARK: Values, for codecs

    /// An integer in decimal, hex (`0x1F`) or octal (`017`), with `-` for signed types;
    /// out of range for `T` is an error.
    public mutating func readInteger<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let start = tokenStart()
        let negative = scanner.consume(UInt8(ascii: "-"))
        guard let text = scanner.number() else { throw error("expected an integer", at: start) }
        let magnitude: UInt64?
        if text.count > 2, text.hasPrefix("0x") || text.hasPrefix("0X") {
            magnitude = UInt64(text.dropFirst(2), radix: 16)
        } else if text.count > 1, text.hasPrefix("0") {
            magnitude = UInt64(text.dropFirst(), radix: 8)
        } else {
            magnitude = UInt64(text, radix: 10)
        }
        let value: T?
        if let magnitude {
            if negative {
                value =
                    T.isSigned && magnitude <= UInt64(T.max) + 1
                    ? T(truncatingIfNeeded: Int64(bitPattern: 0 &- magnitude)) : nil
            } else {
                value = magnitude <= UInt64(T.max) ? T(magnitude) : nil
            }
        } else {
            value = nil
        }
        guard let value else { throw error("\(negative ? "-" : "")\(text) is not a valid \(T.self)", at: start) }
        return value
    }

    /// A number, `inf`, `infinity` or `nan` (any case), with an optional `-` and `f` suffix.
    public mutating func readDouble() throws -> Double {
        try readFloatingPoint(Double.self)
    }

    /// As `readDouble`, rounded once, to the nearest `Float`.
    public mutating func readFloat() throws -> Float {
        try readFloatingPoint(Float.self)
    }

    private mutating func readFloatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type) throws -> T {
        let start = tokenStart()
        let negative = scanner.consume(UInt8(ascii: "-"))
        let sign: T = negative ? -1 : 1
        if let word = scanner.identifier() {
            switch word.lowercased() {
            case "inf", "infinity": return sign * .infinity
            case "nan": return .nan
            default: throw error("\(word) is not a number", at: start)
            }
        }
        guard var text = scanner.number() else { throw error("expected a number", at: start) }
        guard !Self.hasLeadingZero(text) else {
            throw error(
                "\(text) is not a valid \(T.self): a leading 0 makes an octal integer, and floating-point fields take decimal only",
                at: start)
        }
        if text.count > 1, text.last == "f" || text.last == "F" { text.removeLast() }
        let isDecimal = text.utf8.allSatisfy {
            TextFormatScanner.isDigit($0)
                || [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-")].contains($0)
        }
        guard isDecimal, let value = T(text) else { throw error("\(text) is not a number", at: start) }
        return sign * value
    }

    /// Whether a number's text starts with `0` and another digit (`010`, `08`, `00.5`): an
    /// octal integer to the spec, which float and double fields do not take. C++ and Python
    /// reject these rather than read `010` as 10.
    private static func hasLeadingZero(_ text: String) -> Bool {
        let head = Array(text.utf8.prefix(2))
        return head.count == 2 && head[0] == UInt8(ascii: "0") && TextFormatScanner.isDigit(head[1])
    }

    /// `true`, `True`, `t` or `1`; `false`, `False`, `f` or `0`. Only these spellings, as in
    /// Python: the spec and C++ also take other forms of 0 and 1 (`0x1`, `01`, `00`).
    public mutating func readBool() throws -> Bool {
        let start = tokenStart()
        let word = scanner.identifier() ?? scanner.number()
        switch word {
        case "true", "True", "t", "1": return true
        case "false", "False", "f", "0": return false
        default: throw error("expected true or false", at: start)
        }
    }

    /// One or more adjacent quoted strings, as bytes.
    public mutating func readBytes() throws -> [UInt8] {
        guard scanner.atString() else { throw error("expected a quoted string") }
        return try scanning { (scanner: inout TextFormatScanner) throws(ScanError) in try scanner.quotedBytes() }
    }

    /// A quoted string; with `validatingUTF8`, bytes that are not UTF-8 are an error,
    /// otherwise they are repaired to U+FFFD.
    public mutating func readString(validatingUTF8: Bool) throws -> String {
        let start = tokenStart()
        let bytes = try readBytes()
        if !validatingUTF8 { return String(decoding: bytes, as: UTF8.self) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw error("a string is not valid UTF-8", at: start) }
        return text
    }

    /// An enum value by name, or by number: any number for an open enum, a named one for a
    /// closed enum.
    public mutating func readEnum<E: ProtoEnum>(_ type: E.Type) throws -> E {
        let start = tokenStart()
        if let name = scanner.identifier() {
            guard let value = E(protoName: name) else { throw error("\(name) is not a value of enum \(E.self)", at: start) }
            return value
        }
        let number = try readInteger(Int32.self)
        guard let value = E(rawValue: Int(number)) else { throw error("\(number) is not a value of closed enum \(E.self)", at: start) }
        return value
    }
}

/// A map entry as text format writes it: a message of `key` and `value`.
struct MapEntry<K: ProtoMapKeyCodec, V: ProtoFieldCodec>: Message {
    var key = K.defaultValue
    var value = V.defaultValue
    var unknownFields = UnknownFields()

    static var protoMessageName: String { "map entry" }

    init() {}

    mutating func decodeTextField(named name: String, from reader: inout TextFormatReader) throws -> Bool {
        switch name {
        case "key":
            try reader.claim(1, name)
            key = try reader.readField(K.self)
        case "value":
            try reader.claim(2, name)
            value = try reader.readField(V.self)
        default:
            return false
        }
        return true
    }

    func encodeTextFields(to writer: inout TextFormatWriter) {}
    mutating func decodeFields(from reader: inout ProtoReader) throws {}
    func encodeFields(to writer: inout ProtoWriter) {}
    func encodedSize() -> Int { 0 }
    func encodeJSONFields(to writer: inout JSONWriter) throws {}
    mutating func decodeJSONField(named name: String, from reader: inout JSONReader) throws -> Bool { false }
}
