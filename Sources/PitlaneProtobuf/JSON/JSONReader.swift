/// Reads the proto3 JSON mapping from UTF-8 bytes, token by token.
///
/// Generated `decodeJSONField(named:from:)` methods read one member's value through the
/// field's codec (`ProtoFieldCodec.readJSON`); the message-level loop lives in
/// `Message.decodeJSON(from:)`. Every malformed input ends in a `ProtobufJSONError`
/// naming the byte offset.
public struct JSONReader {
    @usableFromInline let bytes: [UInt8]
    @usableFromInline var index = 0
    /// How to read: unknown fields, recursion limit, the types `Any` may hold.
    public let options: JSONDecodingOptions
    @usableFromInline var depth = 0

    /// A reader at the start of `bytes`, UTF-8 JSON text, following `options`.
    public init(bytes: [UInt8], options: JSONDecodingOptions = .init()) {
        self.bytes = bytes
        self.options = options
    }

    /// An error at the current position.
    public func error(_ reason: String) -> ProtobufJSONError {
        ProtobufJSONError(reason: reason, offset: index)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// The next significant byte, not consumed.
    public mutating func peek() throws -> UInt8 {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of input") }
        return bytes[index]
    }

    mutating func expect(_ byte: UInt8) throws {
        guard try peek() == byte else {
            throw error("expected '\(Character(Unicode.Scalar(byte)))'")
        }
        index += 1
    }

    /// What the next value is, in words, for errors.
    func describeNextValue() -> String {
        guard index < bytes.count else { return "the end of the input" }
        switch bytes[index] {
        case UInt8(ascii: "{"): return "an object"
        case UInt8(ascii: "["): return "an array"
        case UInt8(ascii: "\""): return "a string"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "a boolean"
        case UInt8(ascii: "n"): return "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return "a number"
        default: return "'\(Character(Unicode.Scalar(bytes[index])))'"
        }
    }

    mutating func consumeLiteral(_ literal: String) -> Bool {
        let text = Array(literal.utf8)
        guard index + text.count <= bytes.count, Array(bytes[index..<index + text.count]) == text else { return false }
        index += text.count
        return true
    }

    /// Consumes a `null` if one comes next.
    public mutating func consumeNull() throws -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        guard consumeLiteral("null") else { throw error("invalid literal") }
        return true
    }

    /// Reads the literal `true` or `false`; anything else (a string `"true"` included) throws.
    public mutating func readBool() throws -> Bool {
        _ = try peek()
        if consumeLiteral("true") { return true }
        if consumeLiteral("false") { return false }
        throw error("expected true or false")
    }

    // MARK: Containers

    /// Enters a message's object, counting nesting against the recursion limit.
    public mutating func beginObject() throws {
        try expect(UInt8(ascii: "{"))
        depth += 1
        guard depth <= options.recursionLimit else { throw error("objects nested deeper than \(options.recursionLimit)") }
        skipWhitespace()
        if index < bytes.count, bytes[index] != UInt8(ascii: "}") { pendingFirst = true }
    }

    @usableFromInline var pendingFirst = false

    /// The next member's name, or nil at the closing brace (consumed).
    public mutating func nextKey() throws -> String? {
        let next = try peek()
        if next == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            pendingFirst = false
            return nil
        }
        if pendingFirst {
            pendingFirst = false
        } else {
            try expect(UInt8(ascii: ","))
        }
        let name = try readString()
        try expect(UInt8(ascii: ":"))
        return name
    }

    /// Enters an array, counting nesting against the recursion limit; read its elements with ``nextElement()``.
    public mutating func beginArray() throws {
        try expect(UInt8(ascii: "["))
        depth += 1
        guard depth <= options.recursionLimit else { throw error("arrays nested deeper than \(options.recursionLimit)") }
        skipWhitespace()
        if index < bytes.count, bytes[index] != UInt8(ascii: "]") { pendingFirst = true }
    }

    /// Whether another element follows (its comma consumed); false at the closing bracket.
    public mutating func nextElement() throws -> Bool {
        let next = try peek()
        if next == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            pendingFirst = false
            return false
        }
        if pendingFirst {
            pendingFirst = false
        } else {
            try expect(UInt8(ascii: ","))
        }
        return true
    }

    /// Skips any JSON value, as for a field the schema does not know.
    public mutating func skipValue() throws {
        switch try peek() {
        case UInt8(ascii: "{"):
            try beginObject()
            while try nextKey() != nil { try skipValue() }
        case UInt8(ascii: "["):
            try beginArray()
            while try nextElement() { try skipValue() }
        case UInt8(ascii: "\""): _ = try readString()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try readBool()
        case UInt8(ascii: "n"): _ = try consumeNull()
        default: _ = try readNumberText()
        }
    }

    // MARK: Strings

    /// Reads a JSON string with its escapes resolved (`\uD83D\uDE00` pairs included).
    ///
    /// - Throws: `ProtobufJSONError` when the next value is not a string, or the string is unterminated, holds a raw
    ///   control character, a bad escape or an unpaired surrogate.
    public mutating func readString() throws -> String {
        guard try peek() == UInt8(ascii: "\"") else { throw error("expected a string, found \(describeNextValue())") }
        index += 1
        var output: [UInt8] = []
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: output, as: UTF8.self) else { throw error("string is not valid UTF-8") }
                return string
            case UInt8(ascii: "\\"):
                try readEscape(into: &output)
            case 0..<0x20:
                throw error("control character in string")
            default:
                output.append(byte)
            }
        }
    }

    private mutating func readEscape(into output: inout [UInt8]) throws {
        guard index < bytes.count else { throw error("unterminated escape") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(byte)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try readHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard consumeLiteral("\\u") else { throw error("unpaired surrogate") }
                let low = try readHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
            output.append(contentsOf: Array(String(Character(unicode)).utf8))
        default: throw error("invalid escape")
        }
    }

    private mutating func readHex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    // MARK: Numbers

    /// The text of a JSON number token, checked against JSON's number grammar.
    public mutating func readNumberText() throws -> String {
        _ = try peek()
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - from
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0 else { throw error("expected a number") }
        guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { throw error("number with a leading zero") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("expected digits after the decimal point") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw error("expected digits in the exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// A number given as a JSON number or as a string (as 64-bit integers are written).
    public mutating func readNumberOrQuoted() throws -> (text: String, quoted: Bool) {
        if try peek() == UInt8(ascii: "\"") {
            let text = try readString()
            return (text, true)
        }
        return (try readNumberText(), false)
    }

    /// An integer in `T`'s range, from a number or a quoted number; `1e2` and `100.0` are
    /// accepted as 100, `1.5` is not.
    public mutating func readInteger<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let start = index
        let (text, _) = try readNumberOrQuoted()
        if let exact = T(text) { return exact }
        guard let value = Double(text), value == value.rounded(), abs(value) <= 9_007_199_254_740_992 else {
            index = start
            throw error("\(text) is not an integer of type \(T.self)")
        }
        guard let converted = T(exactly: value) else {
            index = start
            throw error("\(text) is out of range for \(T.self)")
        }
        return converted
    }

    /// A double from a number, a quoted number, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
    public mutating func readDouble() throws -> Double {
        let start = index
        let (text, quoted) = try readNumberOrQuoted()
        if quoted {
            switch text {
            case "NaN": return .nan
            case "Infinity": return .infinity
            case "-Infinity": return -.infinity
            default: break
            }
        }
        guard let value = Double(text), !text.contains(where: { $0.isWhitespace }), value.isFinite else {
            index = start
            throw error("\(text) is not a number")
        }
        return value
    }

    /// A float: like a double, but a finite value beyond Float's range is an error.
    public mutating func readFloat() throws -> Float {
        let start = index
        let value = try readDouble()
        if value.isFinite, abs(value) > Double(Float.greatestFiniteMagnitude) {
            index = start
            throw error("\(value) is out of range for float")
        }
        return Float(value)
    }

    /// Whether all input has been read (whitespace aside).
    mutating func isAtEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }
}
