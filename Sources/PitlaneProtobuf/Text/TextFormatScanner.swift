/// The tokens of protobuf text format, read from UTF-8 bytes: identifiers, numbers, quoted
/// strings and punctuation, with whitespace and `#` comments between them skipped.
struct TextFormatScanner {
    let bytes: [UInt8]
    private(set) var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Line and column (both from 1) of `offset`, for errors.
    func position(of offset: Int) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        for (index, byte) in bytes[..<min(offset, bytes.count)].enumerated() where byte == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        return (line, offset - lineStart + 1)
    }

    /// Skips whitespace and comments, and returns the next byte without consuming it.
    mutating func peek() -> UInt8? {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C:
                index += 1
            case UInt8(ascii: "#"):
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            default:
                return bytes[index]
            }
        }
        return nil
    }

    /// Consumes `byte` if it comes next.
    mutating func consume(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        index += 1
        return true
    }

    /// An identifier: a letter or `_`, then letters, digits and `_`.
    mutating func identifier() -> String? {
        guard let first = peek(), Self.isIdentifierStart(first) else { return nil }
        let start = index
        while index < bytes.count, Self.isIdentifierStart(bytes[index]) || Self.isDigit(bytes[index]) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// A number's text: digits, letters (hex digits, exponents, suffixes), dots, and a
    /// sign right after an exponent's `e`.
    mutating func number() -> String? {
        guard let first = peek(), Self.isDigit(first) || first == UInt8(ascii: ".") else { return nil }
        let start = index
        let isHex = first == UInt8(ascii: "0") && index + 1 < bytes.count && bytes[index + 1] | 0x20 == UInt8(ascii: "x")
        while index < bytes.count {
            let byte = bytes[index]
            if Self.isIdentifierStart(byte) || Self.isDigit(byte) || byte == UInt8(ascii: ".") {
                index += 1
            } else if !isHex, byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+"),
                bytes[index - 1] | 0x20 == UInt8(ascii: "e")
            {
                index += 1
            } else {
                break
            }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// Whether a quoted string comes next.
    mutating func atString() -> Bool {
        peek() == UInt8(ascii: "\"") || peek() == UInt8(ascii: "'")
    }

    /// One or more adjacent quoted strings, concatenated, with their escapes decoded.
    mutating func quotedBytes() throws(ScanError) -> [UInt8] {
        var output: [UInt8] = []
        while atString() {
            let quote = bytes[index]
            index += 1
            while true {
                guard index < bytes.count, bytes[index] != UInt8(ascii: "\n") else {
                    throw ScanError(reason: "a string is missing its closing quote", offset: index)
                }
                let byte = bytes[index]
                index += 1
                if byte == quote { break }
                if byte == UInt8(ascii: "\\") {
                    try escape(into: &output)
                } else {
                    output.append(byte)
                }
            }
        }
        return output
    }

    /// Reads the rest of a `[…]` name, after the `[`: an extension's `pkg.ext`, or an `Any`'s
    /// `domain/pkg.Type` (`type.googleapis.com/pkg.Type`). Each part is identifiers joined by
    /// `.` (the spec's TypeName and Domain); parts are joined by `/`, and more than one `/` is
    /// taken, as Python does, since the writer prints whatever type URL an `Any` holds.
    /// Whitespace and comments may come between the tokens (`[ pkg . ext ]`), but two
    /// identifiers need a `.` or `/` between them: `[pkg.my ext]` is an error, not `pkg.myext`.
    mutating func bracketedName() throws(ScanError) -> String {
        var name = try dottedName()
        while consume(UInt8(ascii: "/")) {
            let part = try dottedName()
            name += "/" + part
        }
        guard consume(UInt8(ascii: "]")) else {
            throw ScanError(reason: "expected \".\", \"/\" or \"]\" after [\(name)", offset: index)
        }
        return name
    }

    /// `Ident { "." Ident }`, as one string; whitespace and comments may surround the dots.
    private mutating func dottedName() throws(ScanError) -> String {
        var words: [String] = []
        repeat {
            guard let word = identifier() else {
                throw ScanError(reason: "expected an identifier in a [name]", offset: index)
            }
            words.append(word)
        } while consume(UInt8(ascii: "."))
        return words.joined(separator: ".")
    }

    /// The escapes of C and protobuf's text format: `\n` and friends, `\ooo` octal (1–3
    /// digits), `\xhh` hex (1–2), `\uhhhh` and `\Uhhhhhhhh` code points written as UTF-8.
    private mutating func escape(into output: inout [UInt8]) throws(ScanError) {
        let start = index - 1
        guard index < bytes.count else { throw ScanError(reason: "a string ends in a backslash", offset: start) }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "a"): output.append(0x07)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "v"): output.append(0x0B)
        case UInt8(ascii: "?"), UInt8(ascii: "\\"), UInt8(ascii: "'"), UInt8(ascii: "\""): output.append(byte)
        case UInt8(ascii: "0")...UInt8(ascii: "7"):
            var value = UInt32(byte - UInt8(ascii: "0"))
            for _ in 0..<2 {
                guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(bytes[index]) else { break }
                value = value * 8 + UInt32(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            guard value <= 0xFF else { throw ScanError(reason: "octal escape above \\377", offset: start) }
            output.append(UInt8(value))
        case UInt8(ascii: "x"), UInt8(ascii: "X"):
            let value = hexDigits(max: 2)
            guard let value else { throw ScanError(reason: "\\x needs a hex digit", offset: start) }
            output.append(UInt8(value))
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            let count = byte == UInt8(ascii: "u") ? 4 : 8
            let digitsStart = index
            guard let value = hexDigits(max: count), index - digitsStart == count else {
                throw ScanError(reason: "\\\(Character(Unicode.Scalar(byte))) needs \(count) hex digits", offset: start)
            }
            guard let scalar = Unicode.Scalar(value) else {
                throw ScanError(reason: "\\u escape of a surrogate or beyond U+10FFFF", offset: start)
            }
            output.append(contentsOf: String(Character(scalar)).utf8)
        default:
            throw ScanError(reason: "unknown escape \\\(Character(Unicode.Scalar(byte)))", offset: start)
        }
    }

    private mutating func hexDigits(max: Int) -> UInt32? {
        var value: UInt32?
        for _ in 0..<max {
            guard index < bytes.count, let digit = Self.hexValue(bytes[index]) else { break }
            value = (value ?? 0) * 16 + UInt32(digit)
            index += 1
        }
        return value
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    static func isIdentifierStart(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || byte == UInt8(ascii: "_")
    }
}

/// A token that could not be read, and where.
struct ScanError: Error {
    let reason: String
    let offset: Int
}
