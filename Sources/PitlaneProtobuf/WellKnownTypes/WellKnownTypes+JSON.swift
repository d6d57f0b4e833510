// The special JSON forms of the well-known types (proto3 JSON mapping): a Timestamp is an
// RFC 3339 string, a Duration "1.5s", a FieldMask "a.b,c", a Struct any JSON object, a
// Value any JSON value, a wrapper its bare value, an Any its message with "@type".

/// A message whose JSON form is not an object of its fields; inside an `Any` it goes
/// under a `"value"` member.
protocol JSONSpecialForm {}

extension Google_Protobuf_Timestamp: JSONSpecialForm {
    /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z, the range RFC 3339 allows.
    static let minimumSeconds: Int64 = -62_135_596_800
    static let maximumSeconds: Int64 = 253_402_300_799

    /// Writes the timestamp as an RFC 3339 string in UTC with 0, 3, 6 or 9 fractional digits, like `"1972-01-01T10:00:20.021Z"`.
    ///
    /// - Throws: `ProtobufJSONError` when it lies outside 0001-01-01 to 9999-12-31, or `nanos` is not in `0..<1_000_000_000`.
    public func encodeJSON(to writer: inout JSONWriter) throws {
        guard (Self.minimumSeconds...Self.maximumSeconds).contains(seconds), (0..<1_000_000_000).contains(nanos) else {
            throw ProtobufJSONError(reason: "Timestamp \(seconds)s \(nanos)ns is outside 0001-9999", offset: 0)
        }
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.date(fromDays: days)
        var text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        text += "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        writer.writeString(text + fractionalSeconds(nanos) + "Z")
    }

    /// Reads an RFC 3339 string, with `Z` or a `±HH:MM` offset (converted to UTC) and up to nine fractional digits.
    ///
    /// - Throws: `ProtobufJSONError` when the string is malformed or outside 0001-01-01 to 9999-12-31.
    public mutating func decodeJSON(from reader: inout JSONReader) throws {
        let start = reader.index
        let text = Array(try reader.readString().utf8)
        guard let (seconds, nanos) = Self.parse(text) else {
            reader.index = start
            throw reader.error("Timestamp must be RFC 3339, like 1972-01-01T10:00:20.021Z")
        }
        self.seconds = seconds
        self.nanos = nanos
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    static func parse(_ text: [UInt8]) -> (Int64, Int32)? {
        var scanner = DigitScanner(text)
        guard let year = scanner.number(4), scanner.skip("-"), let month = scanner.number(2), scanner.skip("-"),
            let day = scanner.number(2), scanner.skip("T"),
            let hour = scanner.number(2), scanner.skip(":"), let minute = scanner.number(2), scanner.skip(":"),
            let second = scanner.number(2),
            (1...12).contains(month), (1...CivilDate.daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        guard let nanos = scanner.fraction() else { return nil }
        var offset: Int64 = 0
        if scanner.skip("Z") {
        } else if let sign = scanner.sign(), let offsetHours = scanner.number(2), scanner.skip(":"),
            let offsetMinutes = scanner.number(2), offsetHours < 24, offsetMinutes < 60
        {
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard scanner.isAtEnd else { return nil }
        let seconds =
            CivilDate.days(year: year, month: month, day: day) * 86_400
            + hour * 3600 + minute * 60 + second - offset
        guard (minimumSeconds...maximumSeconds).contains(seconds) else { return nil }
        return (seconds, nanos)
    }
}

extension Google_Protobuf_Duration: JSONSpecialForm {
    /// ±10,000 years, the range the Duration definition allows.
    static let maximumSeconds: Int64 = 315_576_000_000

    /// Writes the duration as a string of seconds with an `s` and 0, 3, 6 or 9 fractional digits, like `"-1.500s"`.
    ///
    /// - Throws: `ProtobufJSONError` when it exceeds ±315,576,000,000 seconds or `seconds` and `nanos` differ in sign.
    public func encodeJSON(to writer: inout JSONWriter) throws {
        guard abs(seconds) <= Self.maximumSeconds, abs(nanos) < 1_000_000_000,
            seconds == 0 || nanos == 0 || (seconds < 0) == (nanos < 0)
        else {
            throw ProtobufJSONError(reason: "Duration \(seconds)s \(nanos)ns is out of range or mixes signs", offset: 0)
        }
        let sign = seconds < 0 || nanos < 0 ? "-" : ""
        writer.writeString(sign + String(abs(seconds)) + fractionalSeconds(abs(nanos)) + "s")
    }

    /// Reads a string of seconds ending in `s`, like `"1.5s"` or `"-0.000001s"`, within ±315,576,000,000 seconds.
    public mutating func decodeJSON(from reader: inout JSONReader) throws {
        let start = reader.index
        var scanner = DigitScanner(Array(try reader.readString().utf8))
        let negative = scanner.skip("-")
        guard let whole = scanner.digits(), let nanos = scanner.fraction(), scanner.skip("s"), scanner.isAtEnd,
            whole <= Self.maximumSeconds
        else {
            reader.index = start
            throw reader.error("Duration must be seconds with an s, like \"1.5s\", within ±315576000000s")
        }
        seconds = negative ? -whole : whole
        self.nanos = negative ? -nanos : nanos
    }
}

extension Google_Protobuf_FieldMask: JSONSpecialForm {
    /// Writes the paths as one string, each in lowerCamelCase, separated by commas: `"user.displayName,photo"`.
    ///
    /// - Throws: `ProtobufJSONError` for a path that does not survive the round trip to camel case and back.
    public func encodeJSON(to writer: inout JSONWriter) throws {
        var camelPaths: [String] = []
        for path in paths {
            let camel = SnakeCase.toCamel(path)
            guard SnakeCase.fromCamel(camel) == path else {
                throw ProtobufJSONError(reason: "FieldMask path \"\(path)\" has no JSON form", offset: 0)
            }
            camelPaths.append(camel)
        }
        writer.writeString(camelPaths.joined(separator: ","))
    }

    /// Reads a comma-separated string of lowerCamelCase paths, turning each into snake_case; an `_` in it throws.
    public mutating func decodeJSON(from reader: inout JSONReader) throws {
        let text = try reader.readString()
        // The JSON form is lowerCamelCase: an underscore cannot come from any path.
        guard !text.contains("_") else { throw reader.error("FieldMask \"\(text)\": JSON paths are lowerCamelCase, without \"_\"") }
        paths =
            text.isEmpty
            ? []
            : text.split(separator: ",", omittingEmptySubsequences: false).map {
                SnakeCase.fromCamel(String($0))
            }
    }
}

extension Google_Protobuf_Struct: JSONSpecialForm {
    /// Writes the fields as a plain JSON object, keys in byte-wise order.
    public func encodeJSON(to writer: inout JSONWriter) throws {
        writer.beginObject()
        for (key, value) in fields.sorted(by: { ProtoStringKeyCodec.precedes($0.key, $1.key) }) {
            writer.key(key.string)
            try value.encodeJSON(to: &writer)
        }
        writer.endObject()
    }

    /// Reads any JSON object, each member becoming an entry of `fields`.
    public mutating func decodeJSON(from reader: inout JSONReader) throws {
        try reader.beginObject()
        while let key = try reader.nextKey() {
            var value = Google_Protobuf_Value()
            try value.decodeJSON(from: &reader)
            fields[key] = value
        }
    }
}

extension Google_Protobuf_ListValue: JSONSpecialForm {
    /// Writes the values as a plain JSON array.
    public func encodeJSON(to writer: inout JSONWriter) throws {
        writer.beginArray()
        for value in values {
            writer.separate()
            try value.encodeJSON(to: &writer)
        }
        writer.endArray()
    }

    /// Reads any JSON array, appending each element to `values`.
    public mutating func decodeJSON(from reader: inout JSONReader) throws {
        try reader.beginArray()
        while try reader.nextElement() {
            var value = Google_Protobuf_Value()
            try value.decodeJSON(from: &reader)
            values.append(value)
        }
    }
}

extension Google_Protobuf_Value: JSONSpecialForm {
    /// Writes the value as the JSON value its kind names: `null`, a number, a string, a boolean, an object or an array.
    ///
    /// - Throws: `ProtobufJSONError` when no kind is set, or the number is NaN or infinite, which JSON cannot hold.
    public func encodeJSON(to writer: inout JSONWriter) throws {
        switch kind {
        case .nullValue?: writer.writeNull()
        case .numberValue(let number)?:
            guard number.isFinite else {
                throw ProtobufJSONError(reason: "a Value cannot hold NaN or Infinity in JSON", offset: 0)
            }
            writer.writeDouble(number)
        case .stringValue(let string)?: writer.writeString(string)
        case .boolValue(let bool)?: writer.writeBool(bool)
        case .structValue(let object)?: try object.encodeJSON(to: &writer)
        case .listValue(let list)?: try list.encodeJSON(to: &writer)
        case nil: throw ProtobufJSONError(reason: "a Value with no kind set has no JSON form", offset: 0)
        }
    }

    /// Reads any JSON value, setting the kind that matches it; every number becomes a `numberValue` double.
    public mutating func decodeJSON(from reader: inout JSONReader) throws {
        switch try reader.peek() {
        case UInt8(ascii: "n"):
            _ = try reader.consumeNull()
            kind = .nullValue(.nullValue)
        case UInt8(ascii: "\""): kind = .stringValue(try reader.readString())
        case UInt8(ascii: "t"), UInt8(ascii: "f"): kind = .boolValue(try reader.readBool())
        case UInt8(ascii: "{"):
            var object = Google_Protobuf_Struct()
            try object.decodeJSON(from: &reader)
            kind = .structValue(object)
        case UInt8(ascii: "["):
            var list = Google_Protobuf_ListValue()
            try list.decodeJSON(from: &reader)
            kind = .listValue(list)
        default: kind = .numberValue(try reader.readDouble())
        }
    }
}

// MARK: Wrappers: the bare value

/// A wrapper message: JSON shows only its `value`.
protocol WrapperMessage: Message, JSONSpecialForm {
    associatedtype Codec: ProtoFieldCodec
    var value: Codec.Value { get set }
}

extension WrapperMessage {
    /// Writes the wrapped value alone, as a field of its type would be written: `"42"` for an `Int64Value`.
    public func encodeJSON(to writer: inout JSONWriter) throws { try Codec.writeJSON(value, to: &writer) }
    /// Reads the bare value, as a field of the wrapped type reads it.
    public mutating func decodeJSON(from reader: inout JSONReader) throws { value = try Codec.readJSON(from: &reader) }
}

extension Google_Protobuf_DoubleValue: WrapperMessage { typealias Codec = ProtoDouble }
extension Google_Protobuf_FloatValue: WrapperMessage { typealias Codec = ProtoFloat }
extension Google_Protobuf_Int64Value: WrapperMessage { typealias Codec = ProtoInt64 }
extension Google_Protobuf_UInt64Value: WrapperMessage { typealias Codec = ProtoUInt64 }
extension Google_Protobuf_Int32Value: WrapperMessage { typealias Codec = ProtoInt32 }
extension Google_Protobuf_UInt32Value: WrapperMessage { typealias Codec = ProtoUInt32 }
extension Google_Protobuf_BoolValue: WrapperMessage { typealias Codec = ProtoBool }
extension Google_Protobuf_StringValue: WrapperMessage { typealias Codec = ProtoString }
extension Google_Protobuf_BytesValue: WrapperMessage { typealias Codec = ProtoBytes }

// MARK: Any: the message with "@type"

extension Google_Protobuf_Any: JSONSpecialForm {
    /// Writes `{"@type": url, …}`: the packed message's fields, or its special form under `"value"`; `{}` when empty.
    ///
    /// - Throws: `ProtobufJSONError` when the writer's type registry does not know the type; `ProtobufDecodingError`
    ///   when the packed bytes do not decode.
    public func encodeJSON(to writer: inout JSONWriter) throws {
        writer.beginObject()
        if !typeURL.isEmpty {
            guard let type = writer.options.typeRegistry.type(named: typeName) else {
                throw ProtobufJSONError(reason: "Any holds \(typeURL), which the type registry does not know", offset: 0)
            }
            writer.key("@type")
            writer.writeString(typeURL)
            try Self.encodePayload(type, value, to: &writer)
        }
        writer.endObject()
    }

    private static func encodePayload<M: Message>(_ type: M.Type, _ bytes: [UInt8], to writer: inout JSONWriter) throws {
        guard writer.depth <= JSONWriter.maxDepth else {
            throw ProtobufJSONError(reason: "Any values nest deeper than \(JSONWriter.maxDepth) objects", offset: 0)
        }
        let message = try M(serializedBytes: bytes, partial: true)
        if M.self is any JSONSpecialForm.Type {
            writer.key("value")
            try message.encodeJSON(to: &writer)
        } else {
            try message.encodeJSONFields(to: &writer)
        }
    }

    /// Reads `{"@type": url, …}` (`"@type"` may come anywhere) and packs the message it describes.
    ///
    /// - Throws: `ProtobufJSONError` when the object has members but no `"@type"`, or the reader's type registry does
    ///   not know the type.
    public mutating func decodeJSON(from reader: inout JSONReader) throws {
        // "@type" may come after the fields, so find it first, then read the object again.
        let start = reader.index
        var foundType: String?
        var memberCount = 0
        try reader.beginObject()
        while let key = try reader.nextKey() {
            memberCount += 1
            if key == "@type" { foundType = try reader.readString() } else { try reader.skipValue() }
        }
        guard let url = foundType else {
            guard memberCount == 0 else {
                reader.index = start
                throw reader.error("an Any with fields needs an \"@type\"")
            }
            return
        }
        typeURL = url
        guard let type = reader.options.typeRegistry.type(named: typeName) else {
            reader.index = start
            throw reader.error("Any holds \(url), which the type registry does not know")
        }
        let end = reader.index
        reader.index = start
        value = try Self.decodePayload(type, from: &reader)
        reader.index = end
    }

    private static func decodePayload<M: Message>(_ type: M.Type, from reader: inout JSONReader) throws -> [UInt8] {
        var message = M()
        try reader.beginObject()
        while let key = try reader.nextKey() {
            if key == "@type" {
                _ = try reader.readString()
            } else if M.self is any JSONSpecialForm.Type {
                guard key == "value" else { throw reader.error("an Any holding \(M.protoMessageName) has only \"value\"") }
                try message.decodeJSON(from: &reader)
            } else if try !message.decodeJSONField(named: key, from: &reader) {
                guard reader.options.ignoreUnknownFields else {
                    throw reader.error("no field named \"\(key)\" in \(M.protoMessageName)")
                }
                try reader.skipValue()
            }
        }
        return try message.serializedBytes(partial: true)
    }
}

// MARK: Helpers

/// `.5` nanoseconds digits as RFC 3339 and Duration want them: none, 3, 6 or 9.
private func fractionalSeconds(_ nanos: Int32) -> String {
    guard nanos != 0 else { return "" }
    if nanos % 1_000_000 == 0 { return "." + pad(Int64(nanos / 1_000_000), 3) }
    if nanos % 1_000 == 0 { return "." + pad(Int64(nanos / 1_000), 6) }
    return "." + pad(Int64(nanos), 9)
}

private func pad(_ value: Int64, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}

/// Proleptic Gregorian calendar arithmetic on day numbers since 1970-01-01.
enum CivilDate {
    static func date(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let adjustedYear = month <= 2 ? year - 1 : year
        let era = (adjustedYear >= 0 ? adjustedYear : adjustedYear - 399) / 400
        let yearOfEra = adjustedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

/// Reads fixed-width numbers and punctuation from ASCII text.
struct DigitScanner {
    let text: [UInt8]
    var index = 0

    init(_ text: [UInt8]) { self.text = text }

    var isAtEnd: Bool { index == text.count }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard index < text.count, text[index] == UInt8(character.value) else { return false }
        index += 1
        return true
    }

    /// Exactly `width` digits.
    mutating func number(_ width: Int) -> Int64? {
        guard index + width <= text.count else { return nil }
        var value: Int64 = 0
        for byte in text[index..<index + width] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        index += width
        return value
    }

    /// One or more digits (at most 12, enough for any Duration).
    mutating func digits() -> Int64? {
        let start = index
        var value: Int64 = 0
        while index < text.count, index - start < 12, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[index]) {
            value = value * 10 + Int64(text[index] - UInt8(ascii: "0"))
            index += 1
        }
        return index > start ? value : nil
    }

    /// An optional `.` and 1 to 9 digits, as nanoseconds; 0 when there is no `.`.
    mutating func fraction() -> Int32? {
        guard skip(".") else { return 0 }
        var nanos: Int32 = 0
        var count = 0
        while index < text.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[index]) {
            guard count < 9 else { return nil }
            nanos = nanos * 10 + Int32(text[index] - UInt8(ascii: "0"))
            count += 1
            index += 1
        }
        guard count > 0 else { return nil }
        for _ in count..<9 { nanos *= 10 }
        return nanos
    }

    mutating func sign() -> Int64? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }
}

/// FieldMask paths: `foo_bar.baz` in protobuf, `fooBar.baz` in JSON.
enum SnakeCase {
    static func toCamel(_ path: String) -> String {
        var result = ""
        var upperNext = false
        for character in path {
            if character == "_" {
                upperNext = true
            } else if upperNext {
                result += character.uppercased()
                upperNext = false
            } else {
                result.append(character)
            }
        }
        return result
    }

    static func fromCamel(_ path: String) -> String {
        var result = ""
        for character in path {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }
}
