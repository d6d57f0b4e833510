import PitlaneProtobuf
import TestSupport
import Testing

// Hostile and broken input: every failure must be a ProtobufDecodingError saying what and
// where, never a crash, a hang or a huge allocation.

private func varint(_ value: UInt64) -> [UInt8] {
    var rest = value
    var out: [UInt8] = []
    while rest >= 0x80 {
        out.append(UInt8(truncatingIfNeeded: rest) | 0x80)
        rest >>= 7
    }
    return out + [UInt8(rest)]
}

/// The error decoding `input` as `M` throws; records an issue (and returns nil) when it
/// decodes or throws anything else.
private func decodingError<M: Message>(
    _ messageType: M.Type, _ input: [UInt8], partial: Bool = false, options: DecodingOptions = .defaults,
    sourceLocation: SourceLocation = #_sourceLocation
) -> ProtobufDecodingError? {
    do {
        _ = try M(serializedBytes: input, partial: partial, options: options)
        Issue.record("\(M.self) decoded \(hex(input))", sourceLocation: sourceLocation)
    } catch let error as ProtobufDecodingError {
        return error
    } catch {
        Issue.record("\(M.self) threw \(type(of: error)), not ProtobufDecodingError: \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// `ProtobufDecodingError.Code` has no public accessors; this tells `.lengthBeyondInput(n)`
/// for any n up to `max` apart from the other codes.
private func isLengthBeyondInput(_ code: ProtobufDecodingError.Code, upTo max: Int) -> Bool {
    (0...UInt64(max)).contains { code == .lengthBeyondInput($0) }
}

/// Valid messages with most fields set, whose encodings the tests cut up and corrupt.
private enum Samples {
    static let allTypes = AllTypes.with {
        $0.int32Value = -5
        $0.int64Value = 1 << 40
        $0.uint64Value = .max
        $0.sint32Value = -300
        $0.fixed32Value = 7
        $0.sfixed64Value = -7
        $0.floatValue = 1.5
        $0.doubleValue = -0.0
        $0.boolValue = true
        $0.stringValue = "Duck Pond Dash 🏁"
        $0.bytesValue = [0, 0xFF, 0x80]
        $0.color = .blue
        $0.nested = .with {
            $0.a = 1
            $0.b = "b"
            $0.children = [.with { $0.kind = .one }]
        }
        $0.optionalString = ""
        $0.repeatedInt32 = [1, -1, 300]
        $0.repeatedFixed64 = [1, 2]
        $0.repeatedDouble = [0.5]
        $0.repeatedString = ["x", "yz"]
        $0.repeatedColor = [.red, .UNRECOGNIZED(99)]
        $0.repeatedNested = [Nested(), .with { $0.a = 2 }]
        $0.unpackedInt32 = [4, 5]
        $0.mapStringInt32 = ["k": 1]
        $0.mapInt32Nested = [-2: .with { $0.b = "v" }]
        $0.mapBoolString = [true: "t"]
        $0.choice = .choiceNested(.with { $0.a = 9 })
        $0.recursive = .with {
            $0.int32Value = 2
            $0.recursive = .with { $0.stringValue = "deep" }
        }
        $0.timestamp = .with {
            $0.seconds = 1_700_000_000
            $0.nanos = 1
        }
        $0.structValue = .with { $0.fields = ["n": .with { $0.kind = .numberValue(1) }] }
        $0.anyValue = .with {
            $0.typeURL = "type.googleapis.com/x"
            $0.value = [8, 1]
        }
        $0.`class` = 3
    }

    static let proto2 = Proto2Types.with {
        $0.id = 1
        $0.count = -42
        $0.label = "label"
        $0.blob = [1, 2]
        $0.ratio = 0.25
        $0.size = .large
        $0.offset = -3
        $0.plainNumbers = [1, 2]
        $0.packedNumbers = [3, 400]
        $0.sizes = [.small]
        $0.packedSizes = [.medium, .large]
        $0.result = .with {
            $0.url = "u"
            $0.rank = 5
        }
        $0.item = [.with { $0.name = "a" }, .with { $0.name = "b" }]
        $0.child = .with {
            $0.name = "c"
            $0.parent = .with {
                $0.id = 2
                $0.item = [.with { $0.name = "i" }]
            }
        }
        $0.children = [.with { $0.name = "d" }]
        $0.childMap = ["m": .with { $0.name = "e" }]
        $0.pickSize = .small
    }

    static let editions = EditionTypes.with {
        $0.explicitNumber = 1
        $0.implicitNumber = 2
        $0.requiredNumber = 3
        $0.checkedText = "checked"
        $0.uncheckedText = "unchecked"
        $0.packedNumbers = [1, 2, 3]
        $0.expandedNumbers = [4, 5]
        $0.openKind = .b
        $0.closedKind = .y
        $0.closedKinds = [.x, .y]
        $0.delimited = .with {
            $0.value = 6
            $0.note = "n"
        }
        $0.delimitedList = [.with { $0.value = 7 }, .init()]
        $0.prefixed = .with { $0.value = 8 }
        $0.innerMap = ["k": .with { $0.note = "v" }]
        $0.eitherText = "either"
    }

    static func encoding<M: Message>(_ message: M) -> [UInt8] {
        try! message.serializedBytes(options: EncodingOptions(deterministic: true))
    }
}

@Suite("Malformed input: errors, not crashes", .timeLimit(.minutes(5)))
struct MalformedInputTests {
    // MARK: Truncation

    /// Offsets where a top-level field ends (and 0): prefixes cut there are complete messages.
    static func fieldBoundaries(_ input: [UInt8]) throws -> Set<Int> {
        try input.withUnsafeBytes { buffer in
            var reader = ProtoReader(buffer)
            var boundaries: Set<Int> = [0]
            while let tag = try reader.nextTag() {
                try reader.skipField(tag)
                boundaries.insert(buffer.count - reader.remaining)
            }
            return boundaries
        }
    }

    /// Decodes every prefix of `message`'s encoding: those ending at a field boundary must
    /// decode, every other one must throw .truncated or .lengthBeyondInput.
    static func checkEveryPrefix<M: Message>(_ message: M) throws {
        let input = Samples.encoding(message)
        let boundaries = try fieldBoundaries(input)
        #expect(boundaries.count > 10, "\(M.self): the sample should have many fields")
        for length in 0...input.count {
            let prefix = Array(input[..<length])
            if boundaries.contains(length) {
                // partial: a prefix may stop before a required field.
                #expect(throws: Never.self, "\(M.self) prefix \(length)") { try M(serializedBytes: prefix, partial: true) }
                continue
            }
            guard let error = decodingError(M.self, prefix, partial: true) else { continue }
            #expect(
                error.code == .truncated || isLengthBeyondInput(error.code, upTo: input.count),
                "\(M.self) prefix \(length) of \(input.count): \(error)"
            )
            #expect(error.offset <= length, "\(M.self) prefix \(length): \(error)")
        }
    }

    @Test("Every prefix of an AllTypes encoding decodes or throws .truncated / .lengthBeyondInput")
    func truncatedAllTypes() throws {
        try Self.checkEveryPrefix(Samples.allTypes)
    }

    @Test("Every prefix of a Proto2Types encoding (groups, closed enums) decodes or throws .truncated / .lengthBeyondInput")
    func truncatedProto2() throws {
        try Self.checkEveryPrefix(Samples.proto2)
    }

    @Test("Every prefix of an EditionTypes encoding (DELIMITED, LEGACY_REQUIRED) decodes or throws .truncated / .lengthBeyondInput")
    func truncatedEditions() throws {
        try Self.checkEveryPrefix(Samples.editions)
    }

    @Test("Short reads of each wire type: tag, varint, fixed32, fixed64, length, payload")
    func shortReads() {
        let cases: [(String, ProtobufDecodingError.Code)] = [
            ("08", .truncated),  // tag without its varint
            ("08 80", .truncated),  // varint with its continuation bit set at the end
            ("3d 01 02", .truncated),  // fixed32 with 2 of 4 bytes
            ("41 01 02 03 04 05 06 07", .truncated),  // fixed64 with 7 of 8 bytes
            ("72", .truncated),  // string tag without a length
            ("72 05 61", .lengthBeyondInput(5)),  // string of 5 with 1 byte left
            ("8a 01 02 12 05 61 61 61 61 61", .lengthBeyondInput(5)),  // fits the input, not the nested message
            ("fa 01 01 80 01", .truncated),  // packed varint running past its run's length
            ("0b 08 01", .truncated),  // group never closed
            ("8a 01 01 0b 0c", .truncated),  // group whose END_GROUP lies outside the enclosing message
        ]
        for (input, code) in cases {
            #expect(decodingError(AllTypes.self, bytes(input))?.code == code, "\(input)")
        }
    }

    // MARK: Random corruption

    /// Decodes `input` as `M`; anything that decodes must encode to bytes that decode again
    /// to the same bytes. Returns whether it decoded.
    static func decodeAndReencode<M: Message>(_ type: M.Type, _ input: [UInt8]) -> Bool {
        let message: M
        do {
            message = try M(serializedBytes: input)
        } catch is ProtobufDecodingError {
            return false
        } catch {
            Issue.record("\(M.self) threw \(error), not ProtobufDecodingError, for \(hex(input))")
            return false
        }
        do {
            // Deterministic, so maps do not reorder between the two encodings.
            let options = EncodingOptions(deterministic: true)
            let first = try message.serializedBytes(options: options)
            #expect(first.count == message.encodedSize(), "\(M.self) \(hex(input))")
            let second = try M(serializedBytes: first).serializedBytes(options: options)
            #expect(second == first, "\(M.self) re-encoding is unstable for \(hex(input))")
        } catch {
            Issue.record("\(M.self) decoded \(hex(input)) but its re-encoding failed: \(error)")
        }
        return true
    }

    @Test("10,000 seeded random byte corruptions: a ProtobufDecodingError or a message that re-encodes stably")
    func randomCorruption() {
        var random = SplitMix64(seed: 2026)
        let samples = [
            Samples.encoding(Samples.allTypes), Samples.encoding(Samples.proto2), Samples.encoding(Samples.editions),
            Samples.encoding(Samples.allTypes.nested), bytes("08 01 a3 01 0b 0c a4 01 72 02 01 03"),
        ]
        var decoded = 0
        var attempts = 0
        for _ in 0..<10_000 {
            var input = samples[Int.random(in: 0..<samples.count, using: &random)]
            // 1 to 4 corruptions: a flipped bit, or a byte replaced by any value.
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let index = Int.random(in: 0..<input.count, using: &random)
                if Bool.random(using: &random) {
                    input[index] ^= 1 << UInt8.random(in: 0...7, using: &random)
                } else {
                    input[index] = UInt8.random(in: 0...255, using: &random)
                }
            }
            // Each type reads the same bytes differently: known fields of one are unknown to another.
            for type in [AllTypes.self, Proto2Types.self, EditionTypes.self, ListRacesResponse.self] as [any Message.Type] {
                attempts += 1
                if Self.decodeAndReencode(type, input) { decoded += 1 }
            }
        }
        // Both outcomes must occur, or the corruption is too mild or too harsh to test anything.
        #expect(decoded > attempts / 20 && decoded < attempts - attempts / 20, "\(decoded) of \(attempts) decoded")
    }

    // MARK: Invalid tags and varints

    @Test("A varint of 11 bytes is .malformedVarint, as a value and as a tag; 10 bytes are fine")
    func elevenByteVarint() throws {
        let value = try #require(decodingError(AllTypes.self, [0x08] + Array(repeating: 0xFF, count: 10) + [0x01]))
        #expect(value.code == .malformedVarint && value.offset == 1 && value.path == [1])
        let tag = try #require(decodingError(AllTypes.self, Array(repeating: 0xFF, count: 10) + [0x01]))
        #expect(tag.code == .malformedVarint && tag.offset == 0)
        #expect(try AllTypes(serializedBytes: [0x08] + Array(repeating: 0xFF, count: 9) + [0x01]).int32Value == -1)
    }

    @Test("Wire types 6 and 7 are .invalidWireType, at top level and nested")
    func invalidWireTypes() {
        #expect(decodingError(AllTypes.self, bytes("0e 00"))?.code == .invalidWireType(6))
        #expect(decodingError(AllTypes.self, bytes("0f 00"))?.code == .invalidWireType(7))
        // Field 99 is unknown; the wire type is still checked before skipping.
        #expect(decodingError(AllTypes.self, bytes("9e 06 00"))?.code == .invalidWireType(6))
        let nested = decodingError(AllTypes.self, bytes("8a 01 01 0f"))
        #expect(nested?.code == .invalidWireType(7) && nested?.path == [17, 1])
    }

    @Test("Field number 0, and one above 2^29 - 1, are .invalidFieldNumber")
    func invalidFieldNumbers() {
        #expect(decodingError(AllTypes.self, bytes("00 00"))?.code == .invalidFieldNumber(0))
        #expect(decodingError(AllTypes.self, bytes("02 00"))?.code == .invalidFieldNumber(0))
        #expect(decodingError(Proto2Types.self, bytes("08 01 05 00 00 00 00"))?.code == .invalidFieldNumber(0))
        // Tag 2^32: field number 2^29.
        #expect(decodingError(AllTypes.self, bytes("80 80 80 80 10 00"))?.code == .invalidFieldNumber(1 << 29))
    }

    @Test("END_GROUP without its START_GROUP, or for another group, is .unmatchedEndGroup")
    func unmatchedEndGroup() {
        #expect(decodingError(AllTypes.self, bytes("0c"))?.code == .unmatchedEndGroup)
        #expect(decodingError(AllTypes.self, bytes("08 01 0c"))?.code == .unmatchedEndGroup)
        // Unknown group 5 closed as group 6.
        #expect(decodingError(AllTypes.self, bytes("2b 08 01 34"))?.code == .unmatchedEndGroup)
        // The known group Result (20) closed as Item (23).
        #expect(decodingError(Proto2Types.self, bytes("08 01 a3 01 bc 01"))?.code == .unmatchedEndGroup)
        // Inside a nested message (child, 30) no group is open, whatever is open outside it.
        #expect(decodingError(Proto2Types.self, bytes("08 01 f2 01 02 a4 01"))?.code == .unmatchedEndGroup)
    }

    // MARK: UTF-8

    @Test(
        "Invalid UTF-8 in a proto3 string is .invalidUTF8 naming the field",
        arguments: [
            "80",  // lone continuation byte
            "c3 28",  // lead byte followed by ASCII
            "c0 80",  // overlong NUL
            "e0 80 80",  // overlong 3-byte
            "ed a0 80",  // UTF-16 surrogate U+D800
            "f4 90 80 80",  // above U+10FFFF
            "e2 82",  // sequence cut short at the end
            "ff",  // never valid
        ]
    )
    func invalidUTF8(payload: String) throws {
        let value = bytes(payload)
        let input = [0x72] + varint(UInt64(value.count)) + value
        let error = try #require(decodingError(AllTypes.self, input))
        #expect(error.code == .invalidUTF8)
        #expect(error.path == [14])
        #expect(error.offset == 2)  // the string's first byte
    }

    @Test("Valid UTF-8 passes, including U+FFFD itself and 4-byte sequences")
    func validUTF8() throws {
        let text = "a\u{FFFD}é🏁\u{10FFFF}"
        let input = [0x72] + varint(UInt64(text.utf8.count)) + Array(text.utf8)
        #expect(try AllTypes(serializedBytes: input).stringValue == text)
    }

    @Test("The path names every field from the top: nested message, map key, repeated, oneof, recursion")
    func invalidUTF8Paths() {
        let cases: [(String, [Int])] = [
            ("8a 01 04 12 02 c3 28", [17, 2]),  // nested.b
            ("9a 03 06 0a 02 c3 28 10 01", [51, 1]),  // map_string_int32 key
            ("e2 02 01 80", [44]),  // repeated_string
            ("f2 03 01 80", [62]),  // choice_string
            ("b2 04 06 8a 01 03 12 01 ff", [70, 17, 2]),  // recursive.nested.b
            ("8a 01 05 1a 03 12 01 ff", [17, 3, 2]),  // nested.children[0].b
        ]
        for (input, path) in cases {
            let error = decodingError(AllTypes.self, bytes(input))
            #expect(error?.code == .invalidUTF8, "\(input)")
            #expect(error?.path == path, "\(input)")
        }
        // Editions: utf8_validation = VERIFY on checked_text (5).
        let editions = decodingError(EditionTypes.self, bytes("18 01 2a 02 c3 28"))
        #expect(editions?.code == .invalidUTF8 && editions?.path == [5])
    }

    @Test("A broken tag after a nested message, group or map entry has the path of the field just read at that level")
    func pathAfterNestedField() {
        // Each input: a group, map entry or message whose last inner field has another number,
        // then a tag cut short (80). readGroup and readMapEntry restore the outer field number.
        let group = decodingError(Proto2Types.self, bytes("08 01 a3 01 b0 01 02 a4 01 80"))
        #expect(group?.code == .truncated && group?.path == [20])
        let mapEntry = decodingError(AllTypes.self, bytes("9a 03 02 10 07 80"))
        #expect(mapEntry?.code == .truncated && mapEntry?.path == [51])
        // readMessage must restore it too; at cf88de3 it did not, and the path was [2]:
        // AllTypes.int64_value, a field that is not in the input at all.
        let message = decodingError(AllTypes.self, bytes("8a 01 02 10 01 80"))
        #expect(message?.code == .truncated)
        #expect(message?.path == [17], "path \(message?.path ?? [])")
    }

    @Test("proto2 strings and utf8_validation = NONE accept invalid UTF-8, repairing it to U+FFFD")
    func unverifiedStrings() throws {
        let proto2 = try Proto2Types(serializedBytes: bytes("08 01 1a 02 c3 28"))
        #expect(proto2.label == "\u{FFFD}(")
        let child = try Proto2Types(serializedBytes: bytes("08 01 f2 01 03 0a 01 ff"))
        #expect(child.child.name == "\u{FFFD}")
        let editions = try EditionTypes(serializedBytes: bytes("18 01 32 02 c3 28"))
        #expect(editions.uncheckedText == "\u{FFFD}(")
    }

    // MARK: Limits

    /// `depth` AllTypes nested through `recursive` (field 70, tag b2 04) under the top level.
    static func nestedRecursive(depth: Int) -> [UInt8] {
        var payload: [UInt8] = []
        for _ in 0..<depth {
            payload = [0xB2, 0x04] + varint(UInt64(payload.count)) + payload
        }
        return payload
    }

    @Test("100 nested messages decode; 101 throw .recursionLimitExceeded(100), as C++ does")
    func recursionLimit() throws {
        var message = try AllTypes(serializedBytes: Self.nestedRecursive(depth: 100))
        var levels = 0
        while message.hasRecursive {
            message = message.recursive
            levels += 1
        }
        #expect(levels == 100)

        let error = try #require(decodingError(AllTypes.self, Self.nestedRecursive(depth: 101)))
        #expect(error.code == .recursionLimitExceeded(100))
        #expect(error.path == Array(repeating: 70, count: 101))
    }

    @Test("DecodingOptions.recursionLimit moves the limit, for messages and groups alike")
    func customRecursionLimit() {
        var options = DecodingOptions()
        options.recursionLimit = 10
        #expect(throws: Never.self) { try AllTypes(serializedBytes: Self.nestedRecursive(depth: 10), options: options) }
        let error = decodingError(AllTypes.self, Self.nestedRecursive(depth: 11), options: options)
        #expect(error?.code == .recursionLimitExceeded(10))
        // Five messages, then six unknown groups inside the innermost: 11 levels.
        var mixed = Array(repeating: UInt8(0x0B), count: 6) + Array(repeating: UInt8(0x0C), count: 6)
        for _ in 0..<5 { mixed = [0xB2, 0x04] + varint(UInt64(mixed.count)) + mixed }
        #expect(decodingError(AllTypes.self, mixed, options: options)?.code == .recursionLimitExceeded(10))
        options.recursionLimit = 11
        #expect(throws: Never.self) { try AllTypes(serializedBytes: mixed, options: options) }
    }

    @Test("Group nesting bombs stop at the recursion limit instead of overflowing the stack")
    func groupBombs() {
        // A million START_GROUP tags of field 1: unknown groups (field 1 is an int32) skipped recursively.
        let unknown = Array(repeating: UInt8(0x0B), count: 1_000_000)
        #expect(decodingError(AllTypes.self, unknown)?.code == .recursionLimitExceeded(100))
        // Inside a known proto2 group (Result, 20).
        #expect(decodingError(Proto2Types.self, [0x08, 0x01, 0xA3, 0x01] + unknown)?.code == .recursionLimitExceeded(100))
        // Known DELIMITED groups (delimited, 12) nested in themselves through unknown fields of Inner.
        let delimited = Array(repeating: UInt8(0x63), count: 1_000_000)
        #expect(decodingError(EditionTypes.self, delimited)?.code == .recursionLimitExceeded(100))
        // Balanced: 100 open and closed groups are fine, 101 are not.
        let hundred = Array(repeating: UInt8(0x0B), count: 100) + Array(repeating: UInt8(0x0C), count: 100)
        #expect(throws: Never.self) { try AllTypes(serializedBytes: hundred) }
        #expect(decodingError(AllTypes.self, [0x0B] + hundred + [0x0C])?.code == .recursionLimitExceeded(100))
    }

    @Test("Huge length prefixes on tiny inputs throw .lengthBeyondInput before allocating")
    func hugeLengths() {
        // 2^62 would be a fatal allocation if anything reserved space before checking the length.
        let huge: [(String, UInt64)] = [
            ("72", 1 << 31),  // string
            ("7a", 1 << 62),  // bytes
            ("8a 01", 1 << 62),  // nested message
            ("b2 02", 1 << 62),  // packed fixed64 (reserveCapacity would follow the length)
            ("9a 03", 1 << 62),  // map entry
            ("9a 06", 1 << 62),  // unknown field 99
            ("fa 01", .max),  // packed int32
        ]
        for (tag, length) in huge {
            let input = bytes(tag) + varint(length) + [0, 0, 0, 0]
            let error = decodingError(AllTypes.self, input)
            #expect(error?.code == .lengthBeyondInput(length), "\(tag)")
        }
        // The brief's case exactly: a 2^31 string length in 10 bytes.
        let ten = bytes("72 80 80 80 80 08 00 00 00 00")
        #expect(decodingError(AllTypes.self, ten)?.code == .lengthBeyondInput(1 << 31))
    }

    @Test("DecodingOptions.sizeLimit rejects larger input with .tooLarge before reading it")
    func sizeLimit() throws {
        var options = DecodingOptions()
        options.sizeLimit = 4
        let error = try #require(decodingError(AllTypes.self, bytes("08 01 10 02 18"), options: options))
        #expect(error.code == .tooLarge(size: 5, limit: 4) && error.offset == 0)
        // At the limit is fine; so is garbage above it never being looked at.
        #expect(try AllTypes(serializedBytes: bytes("08 01 10 02"), options: options).int64Value == 2)
        #expect(decodingError(AllTypes.self, bytes("ff ff ff ff ff"), options: options)?.code == .tooLarge(size: 5, limit: 4))
    }

    @Test("A packed fixed-width run whose length is not a multiple of the width is .invalidPackedLength")
    func invalidPackedLength() {
        // repeated_fixed32 = 37 (aa 02), repeated_fixed64 = 38 (b2 02), repeated_double = 42 (d2 02).
        let fixed32 = decodingError(AllTypes.self, bytes("aa 02 05 01 02 03 04 05"))
        #expect(fixed32?.code == .invalidPackedLength(5) && fixed32?.path == [37])
        #expect(decodingError(AllTypes.self, bytes("b2 02 0c") + Array(repeating: 1, count: 12))?.code == .invalidPackedLength(12))
        #expect(decodingError(AllTypes.self, bytes("d2 02 07") + Array(repeating: 1, count: 7))?.code == .invalidPackedLength(7))
        // Inside a nested message the path says where.
        let nested = decodingError(AllTypes.self, bytes("b2 04 06 aa 02 03 01 02 03"))
        #expect(nested?.code == .invalidPackedLength(3) && nested?.path == [70, 37])
    }

    // MARK: Messages

    @Test("The error's description names the message, the problem, the byte offset and the field path")
    func errorDescription() throws {
        let error = try #require(decodingError(AllTypes.self, bytes("08 01 8a 01 04 12 02 c3 28")))
        #expect(error.messageName == "pitlane.test.proto3.AllTypes")
        #expect(error.offset == 7)
        let text = error.description
        #expect(text.contains("pitlane.test.proto3.AllTypes"), "\(text)")
        #expect(text.contains("byte 7"), "\(text)")
        #expect(text.contains("UTF-8"), "\(text)")
        #expect(text.contains("17.2"), "\(text)")

        let truncated = try #require(decodingError(Proto2Types.self, bytes("08 01 3d 01")))
        #expect(truncated.description.contains("pitlane.test.proto2.Proto2Types"), "\(truncated)")
        #expect(truncated.description.contains("byte 3"), "\(truncated)")
    }
}
