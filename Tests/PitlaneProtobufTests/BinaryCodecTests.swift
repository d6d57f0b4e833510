import PitlaneProtobuf
import Testing

// Hand-written wire bytes for each encoding rule. Every expected byte string follows the
// protobuf encoding spec and was cross-checked against Python protobuf (upb) or, for the
// deterministic map order, against C++ libprotobuf 3.21.

/// The message's encoding as hex; `deterministic` sorts map keys.
private func encoded<M: Message>(_ message: M, deterministic: Bool = false) throws -> String {
    hex(try message.serializedBytes(options: EncodingOptions(deterministic: deterministic)))
}

/// Decodes hex, so tests read as "these wire bytes mean this message".
private func decode<M: Message>(
    _ type: M.Type, _ hexBytes: String, partial: Bool = false, options: DecodingOptions = .defaults
) throws -> M {
    try M(serializedBytes: bytes(hexBytes), partial: partial, options: options)
}

@Suite("Binary codec: hand-written wire bytes", .timeLimit(.minutes(5)))
struct BinaryCodecTests {
    // MARK: Varints

    @Test(
        "int32 varints: 1 byte up to 127, 2 from 128, negative values sign-extended to 10 bytes",
        arguments: [
            (Int32(0), ""),  // implicit presence: the default is not written at all
            (1, "08 01"),
            (127, "08 7f"),
            (128, "08 80 01"),
            (300, "08 ac 02"),
            (Int32.max, "08 ff ff ff ff 07"),
            (-1, "08 ff ff ff ff ff ff ff ff ff 01"),
            (Int32.min, "08 80 80 80 80 f8 ff ff ff ff 01"),
        ]
    )
    func int32Varints(value: Int32, wire: String) throws {
        let message = AllTypes.with { $0.int32Value = value }
        #expect(try encoded(message) == wire)
        #expect(message.encodedSize() == bytes(wire).count)
        #expect(try decode(AllTypes.self, wire).int32Value == value)
    }

    @Test("uint64 and int64 varints at the top of their range take 10 bytes")
    func wideVarints() throws {
        #expect(try encoded(AllTypes.with { $0.uint64Value = 1 << 63 }) == "20 80 80 80 80 80 80 80 80 80 01")
        #expect(try encoded(AllTypes.with { $0.uint64Value = .max }) == "20 ff ff ff ff ff ff ff ff ff 01")
        #expect(try encoded(AllTypes.with { $0.int64Value = .min }) == "10 80 80 80 80 80 80 80 80 80 01")
        #expect(try decode(AllTypes.self, "20 80 80 80 80 80 80 80 80 80 01").uint64Value == 1 << 63)
        #expect(try decode(AllTypes.self, "10 ff ff ff ff ff ff ff ff ff 01").int64Value == -1)
    }

    @Test("int32 read from a 5-byte varint truncates to 32 bits, as C++ does; overlong zero padding is accepted")
    func int32FromShortAndOverlongVarints() throws {
        // Writers that encode int32 -1 as uint32 send 5 bytes; it must still read as -1.
        #expect(try decode(AllTypes.self, "08 ff ff ff ff 0f").int32Value == -1)
        // 0x80 0x00 is a non-canonical 1: legal on the wire, canonical when written back.
        let overlong = try decode(AllTypes.self, "08 81 80 80 00")
        #expect(overlong.int32Value == 1)
        #expect(try encoded(overlong) == "08 01")
    }

    @Test("sint32 and sint64 use ZigZag: small negatives are short, extremes take the full width")
    func zigZag() throws {
        let sint32Cases: [(Int32, String)] = [
            (-1, "28 01"), (1, "28 02"), (-64, "28 7f"), (64, "28 80 01"),
            (.max, "28 fe ff ff ff 0f"), (.min, "28 ff ff ff ff 0f"),
        ]
        for (value, wire) in sint32Cases {
            #expect(try encoded(AllTypes.with { $0.sint32Value = value }) == wire, "sint32 \(value)")
            #expect(try decode(AllTypes.self, wire).sint32Value == value, "sint32 \(value)")
        }
        let sint64Cases: [(Int64, String)] = [
            (-1, "30 01"), (.max, "30 fe ff ff ff ff ff ff ff ff 01"), (.min, "30 ff ff ff ff ff ff ff ff ff 01"),
        ]
        for (value, wire) in sint64Cases {
            #expect(try encoded(AllTypes.with { $0.sint64Value = value }) == wire, "sint64 \(value)")
            #expect(try decode(AllTypes.self, wire).sint64Value == value, "sint64 \(value)")
        }
    }

    // MARK: Fixed width

    @Test("fixed32, fixed64, sfixed, float and double are little-endian")
    func fixedWidth() throws {
        let message = AllTypes.with {
            $0.fixed32Value = 0xDEAD_BEEF
            $0.fixed64Value = .max
            $0.sfixed32Value = -2
            $0.sfixed64Value = .min
            $0.floatValue = 1.5
            $0.doubleValue = -2.25
        }
        let wire =
            "3d ef be ad de  41 ff ff ff ff ff ff ff ff  4d fe ff ff ff  51 00 00 00 00 00 00 00 80"
            + "  5d 00 00 c0 3f  61 00 00 00 00 00 00 02 c0"
        #expect(try encoded(message) == hex(bytes(wire)))
        #expect(try decode(AllTypes.self, wire) == message)
    }

    @Test("-0.0 in a proto3 implicit float or double is written (it is not the default 0.0), as C++ writes it")
    func negativeZeroIsWritten() throws {
        let message = AllTypes.with {
            $0.floatValue = -0.0
            $0.doubleValue = -0.0
        }
        #expect(try encoded(message) == "5d 00 00 00 80 61 00 00 00 00 00 00 00 80")
        let decoded = try decode(AllTypes.self, "5d 00 00 00 80 61 00 00 00 00 00 00 00 80")
        #expect(decoded.floatValue.sign == .minus && decoded.floatValue == 0)
        #expect(decoded.doubleValue.sign == .minus && decoded.doubleValue == 0)
        // +0.0 is the default and stays off the wire.
        #expect(try encoded(AllTypes.with { $0.doubleValue = 0.0 }) == "")
    }

    @Test("NaN payloads survive a round trip bit for bit")
    func nanPayloads() throws {
        let wire = "5d 01 00 c0 7f  61 01 00 00 00 00 00 f8 7f"
        let decoded = try decode(AllTypes.self, wire)
        #expect(decoded.floatValue.bitPattern == 0x7FC0_0001)
        #expect(decoded.doubleValue.bitPattern == 0x7FF8_0000_0000_0001)
        #expect(try encoded(decoded) == hex(bytes(wire)))
    }

    // MARK: Repeated fields

    @Test("A repeated int32 decodes from packed and from unpacked wire bytes alike")
    func packedAndUnpackedDecodeAlike() throws {
        let packed = "fa 01 0d 01 96 01 ff ff ff ff ff ff ff ff ff 01"
        let unpacked = "f8 01 01  f8 01 96 01  f8 01 ff ff ff ff ff ff ff ff ff 01"
        #expect(try decode(AllTypes.self, packed).repeatedInt32 == [1, 150, -1])
        #expect(try decode(AllTypes.self, unpacked).repeatedInt32 == [1, 150, -1])
        // proto3 writes packed.
        #expect(try encoded(AllTypes.with { $0.repeatedInt32 = [1, 150, -1] }) == packed)
    }

    @Test("Long packed runs of varints of every width round-trip (the decoder counts them to size the array)")
    func longPackedRuns() throws {
        let widths: [Int32] = [0, 1, 127, 128, 300, 16_384, 2_097_152, -1, .max, .min]
        for count in [1, 7, 8, 9, 15, 16, 17, 100] {
            let values = (0..<count).map { widths[$0 % widths.count] }
            let message = AllTypes.with { $0.repeatedInt32 = values }
            #expect(try AllTypes(serializedBytes: message.serializedBytes()).repeatedInt32 == values)
        }
    }

    @Test("200,000 one-element packed runs of one field decode in linear time, varint and fixed-width")
    func manySmallPackedRuns() throws {
        let runs = 200_000
        // Field 31 (repeated int32) and 37 (repeated fixed32), each run a length prefix and one element.
        let varints = repeatElement([0xFA, 0x01, 0x01, 0x05] as [UInt8], count: runs).joined()
        let fixed = repeatElement([0xAA, 0x02, 0x04, 0x07, 0x00, 0x00, 0x00] as [UInt8], count: runs).joined()
        let message = try AllTypes(serializedBytes: Array(varints) + Array(fixed))
        #expect(message.repeatedInt32.count == runs && message.repeatedInt32.allSatisfy { $0 == 5 })
        #expect(message.repeatedFixed32.count == runs && message.repeatedFixed32.allSatisfy { $0 == 7 })
    }

    @Test("UTF8Check.isASCII agrees with a byte-by-byte check at every length and position")
    func asciiCheck() {
        for count in 0...24 {
            for position in -1..<count {
                var bytes = [UInt8](repeating: 0x41, count: count)
                if position >= 0 { bytes[position] = 0xC3 }
                let expected = bytes.allSatisfy { $0 < 0x80 }
                #expect(bytes.withUnsafeBufferPointer(UTF8Check.isASCII) == expected, "\(count) bytes, 0xC3 at \(position)")
            }
        }
    }

    @Test("Packed and unpacked runs of one field in one message append in wire order")
    func mixedPackedAndUnpacked() throws {
        let message = try decode(AllTypes.self, "f8 01 07  fa 01 02 08 09  f8 01 0a")
        #expect(message.repeatedInt32 == [7, 8, 9, 10])
        #expect(try encoded(message) == "fa 01 04 07 08 09 0a")
    }

    @Test("[packed = false] and EXPANDED fields accept packed input but write one tag per element")
    func expandedFieldsAcceptPacked() throws {
        // AllTypes.unpacked_int32 = 48: tag 384 (80 03) unpacked, 386 (82 03) packed.
        let proto3 = try decode(AllTypes.self, "82 03 02 01 02  80 03 03")
        #expect(proto3.unpackedInt32 == [1, 2, 3])
        #expect(try encoded(proto3) == "80 03 01 80 03 02 80 03 03")

        // proto2 repeated scalars are unpacked unless [packed = true].
        let proto2 = try decode(Proto2Types.self, "08 01  5a 02 05 06  62 02 07 08")
        #expect(proto2.plainNumbers == [5, 6] && proto2.packedNumbers == [7, 8])
        #expect(try encoded(proto2) == "08 01 58 05 58 06 62 02 07 08")

        // Edition 2024 packs by default; EXPANDED (field 8) does not.
        let editions = try decode(EditionTypes.self, "18 01  38 01  40 02  42 02 03 04", partial: true)
        #expect(editions.packedNumbers == [1] && editions.expandedNumbers == [2, 3, 4])
        #expect(try encoded(editions) == "18 01 3a 01 01 40 02 40 03 40 04")
    }

    @Test("Packed fixed-width runs decode element by element")
    func packedFixedWidth() throws {
        // repeated_fixed32 = 37 (aa 02 packed), repeated_double = 42 (d2 02 packed).
        let message = try decode(AllTypes.self, "aa 02 08 01 00 00 00 ff ff ff ff  ad 02 02 00 00 00  d2 02 08 00 00 00 00 00 00 f0 3f")
        #expect(message.repeatedFixed32 == [1, .max, 2])
        #expect(message.repeatedDouble == [1.0])
        #expect(try encoded(message) == "aa 02 0c 01 00 00 00 ff ff ff ff 02 00 00 00 d2 02 08 00 00 00 00 00 00 f0 3f")
    }

    // MARK: Presence and defaults

    @Test("proto3 implicit fields at their defaults are not written; explicit `optional` ones are")
    func proto3ImplicitDefaults() throws {
        let defaults = AllTypes.with {
            $0.int32Value = 0
            $0.stringValue = ""
            $0.bytesValue = []
            $0.boolValue = false
            $0.color = .unspecified
            $0.repeatedInt32 = []
        }
        #expect(try encoded(defaults) == "")
        #expect(defaults.encodedSize() == 0)
        // `optional int32 = 21` and a message field set to its default are present, so written.
        let present = AllTypes.with {
            $0.optionalInt32 = 0
            $0.nested = Nested()
        }
        #expect(try encoded(present) == "8a 01 00 a8 01 00")
        let decoded = try decode(AllTypes.self, "a8 01 00")
        #expect(decoded.hasOptionalInt32 && !decoded.hasNested)
    }

    @Test("proto2 defaults read back when a field is absent, and absent fields are not written")
    func proto2Defaults() throws {
        var message = Proto2Types.with { $0.id = 1 }
        #expect(message.count == -42)
        #expect(message.label == "pit \"lane\"\n")
        #expect(message.blob == [1, 255, 97])
        #expect(message.ratio == 2.5)
        #expect(message.limit == .infinity)
        #expect(message.enabled == true)
        #expect(message.size == .medium)
        #expect(message.big == .max)
        #expect(!message.hasCount && !message.hasLabel && !message.hasSize)
        #expect(try encoded(message) == "08 01")

        // Setting a field to its default makes it present, so it is written.
        message.count = -42
        #expect(message.hasCount)
        #expect(try encoded(message) == "08 01 10 d6 ff ff ff ff ff ff ff ff 01")
        message.clearCount()
        #expect(try encoded(message) == "08 01")

        // The editions `[default = 100]` works the same way.
        #expect(EditionTypes().defaulted == 100 && !EditionTypes().hasDefaulted)
    }

    @Test("ListRacesRequest.limit defaults to 100, with hasLimit and clearLimit")
    func listRacesLimitDefault() throws {
        var request = ListRacesRequest()
        #expect(request.limit == 100 && !request.hasLimit)
        #expect(try encoded(request) == "")
        request.limit = 100
        #expect(request.hasLimit)
        #expect(try encoded(request) == "08 64")
        request.clearLimit()
        #expect(request.limit == 100 && !request.hasLimit)
        #expect(try encoded(request) == "")
        // An explicit 0 on the wire is present and reads as 0, not as the default.
        let zero = try decode(ListRacesRequest.self, "08 00")
        #expect(zero.limit == 0 && zero.hasLimit)
    }

    // MARK: Merging

    @Test("A repeated scalar field on the wire: the last value wins")
    func lastScalarWins() throws {
        #expect(try decode(AllTypes.self, "08 01 08 02").int32Value == 2)
        #expect(try decode(AllTypes.self, "72 01 61 72 01 62").stringValue == "b")
    }

    @Test("oneof: the last member on the wire wins, and the others are not written")
    func oneofLastWins() throws {
        // choice_uint32 = 61 (e8 03), choice_string = 62 (f2 03).
        let stringLast = try decode(AllTypes.self, "e8 03 05  f2 03 01 78")
        #expect(stringLast.choice == .choiceString("x"))
        #expect(try encoded(stringLast) == "f2 03 01 78")
        #expect(try decode(AllTypes.self, "f2 03 01 78  e8 03 05").choice == .choiceUint32(5))
    }

    @Test("oneof message member twice merges; another member in between starts it afresh")
    func oneofMessageMerges() throws {
        // choice_nested = 63 (fa 03): {a: 1} then {b: "hi"}.
        let merged = try decode(AllTypes.self, "fa 03 02 08 01  fa 03 04 12 02 68 69")
        #expect(
            merged.choice
                == .choiceNested(
                    Nested.with {
                        $0.a = 1
                        $0.b = "hi"
                    }))
        let reset = try decode(AllTypes.self, "fa 03 02 08 01  f2 03 01 78  fa 03 04 12 02 68 69")
        #expect(reset.choice == .choiceNested(Nested.with { $0.b = "hi" }))
    }

    @Test("A singular message field appearing twice is merged, not replaced")
    func singularMessagesMerge() throws {
        // nested = 17 (8a 01): {a: 5}, then {b: "hi", children: [{}]}.
        let message = try decode(AllTypes.self, "8a 01 04 08 05 1a 00  8a 01 06 12 02 68 69 1a 00")
        #expect(message.nested.a == 5)
        #expect(message.nested.b == "hi")
        #expect(message.nested.children.count == 2)  // repeated fields inside append

        // recursive = 70 (b2 04) is boxed; merging must reach through the box.
        let recursive = try decode(AllTypes.self, "b2 04 02 08 07  b2 04 03 72 01 78")
        #expect(recursive.recursive.int32Value == 7 && recursive.recursive.stringValue == "x")

        // proto2 child = 30 (f2 01), also boxed (Child refers back to Proto2Types).
        let proto2 = try decode(Proto2Types.self, "08 01  f2 01 03 0a 01 61  f2 01 04 12 02 08 02")
        #expect(proto2.child.name == "a" && proto2.child.parent.id == 2)
    }

    @Test("merge(serializedBytes:) replaces scalars and appends repeated fields of an existing message")
    func mergeIntoExisting() throws {
        var message = AllTypes.with {
            $0.int32Value = 1
            $0.stringValue = "keep"
            $0.repeatedString = ["a"]
        }
        try message.merge(serializedBytes: bytes("08 02  e2 02 01 62"))
        #expect(message.int32Value == 2 && message.stringValue == "keep" && message.repeatedString == ["a", "b"])
    }

    // MARK: Unknown fields

    /// Fields of every wire type that Subset does not know, interleaved with two it does.
    static let subsetInput = "10 05  08 01  7a 01 41  c3 0c 08 01 c4 0c  3d 01 02 03 04  8a 01 02 08 02  c0 3e 09"
    static let subsetUnknown = "10 05 7a 01 41 c3 0c 08 01 c4 0c 3d 01 02 03 04 c0 3e 09"

    @Test("Unknown fields of every wire type are kept in wire order and written after the known fields")
    func unknownFieldsRoundTrip() throws {
        let message = try decode(Subset.self, Self.subsetInput)
        #expect(message.int32Value == 1 && message.nested.a == 2)
        #expect(hex(message.unknownFields.bytes) == Self.subsetUnknown)
        #expect(try encoded(message) == "08 01 8a 01 02 08 02 " + Self.subsetUnknown)
        // The full schema reads them back from Pitlane's output.
        let full = try decode(AllTypes.self, try encoded(message))
        #expect(full.int64Value == 5 && full.bytesValue == [0x41] && full.fixed32Value == 0x0403_0201)
    }

    @Test("A known field with the wrong wire type goes to unknown fields, as in C++")
    func mismatchedWireTypeIsUnknown() throws {
        // int32_value = 1 sent as fixed32 (0d).
        let message = try decode(AllTypes.self, "0d 01 00 00 00")
        #expect(message.int32Value == 0)
        #expect(hex(message.unknownFields.bytes) == "0d 01 00 00 00")
        #expect(try encoded(message) == "0d 01 00 00 00")
        // Inside a nested message they stay with that message.
        let nested = try decode(AllTypes.self, "8a 01 02 10 01")  // Nested.b = 2 sent as a varint
        #expect(hex(nested.nested.unknownFields.bytes) == "10 01" && nested.unknownFields.isEmpty)
    }

    @Test("DecodingOptions.discardUnknownFields drops unknown fields")
    func discardUnknownFields() throws {
        var options = DecodingOptions()
        options.discardUnknownFields = true
        let message = try decode(Subset.self, Self.subsetInput, options: options)
        #expect(message.unknownFields.isEmpty)
        #expect(try encoded(message) == "08 01 8a 01 02 08 02")
        let nested = try decode(AllTypes.self, "8a 01 02 10 01", options: options)
        #expect(nested.nested.unknownFields.isEmpty)
    }

    @Test("discardUnknownFields also drops closed-enum values the schema does not name")
    func discardUnknownClosedEnumValues() throws {
        // readClosedEnum keeps these values itself, not through readUnknownField, so it has to
        // honour the option too (it did not at cf88de3: "40 07" and "70 07" were kept).
        var options = DecodingOptions()
        options.discardUnknownFields = true
        let singular = try decode(Proto2Types.self, "08 01 40 07", options: options)
        #expect(singular.unknownFields.isEmpty, "kept: \(hex(singular.unknownFields.bytes))")
        let packed = try decode(Proto2Types.self, "08 01 72 03 01 07 03", options: options)
        #expect(packed.packedSizes == [.small, .large])
        #expect(packed.unknownFields.isEmpty, "kept: \(hex(packed.unknownFields.bytes))")
    }

    // MARK: Enums

    @Test("A closed enum's unknown value goes to unknown fields: singular, repeated, packed and oneof")
    func closedEnumUnknownValues() throws {
        // size = 8 (40): 7 is not a Size.
        let singular = try decode(Proto2Types.self, "08 01 40 07")
        #expect(!singular.hasSize && singular.size == .medium)
        #expect(hex(singular.unknownFields.bytes) == "40 07")
        #expect(try encoded(singular) == "08 01 40 07")

        // Negative numbers keep their 10-byte form.
        let negative = try decode(Proto2Types.self, "08 01 40 ff ff ff ff ff ff ff ff ff 01")
        #expect(hex(negative.unknownFields.bytes) == "40 ff ff ff ff ff ff ff ff ff 01")

        // sizes = 13 (68), unpacked.
        let repeated = try decode(Proto2Types.self, "08 01 68 02 68 09 68 03")
        #expect(repeated.sizes == [.medium, .large])
        #expect(try encoded(repeated) == "08 01 68 02 68 03 68 09")

        // packed_sizes = 14 (72): the unknown element becomes an unpacked varint field (70 07).
        let packed = try decode(Proto2Types.self, "08 01 72 03 01 07 03")
        #expect(packed.packedSizes == [.small, .large])
        #expect(hex(packed.unknownFields.bytes) == "70 07")
        #expect(try encoded(packed) == "08 01 72 02 01 03 70 07")

        // pick_size = 41 (c8 02) in a oneof: the oneof stays unset.
        let oneof = try decode(Proto2Types.self, "08 01 c8 02 09")
        #expect(oneof.pick == nil)
        #expect(hex(oneof.unknownFields.bytes) == "c8 02 09")

        // Editions CLOSED: closed_kind = 10 (50), closed_kinds = 11 (5a packed).
        let editions = try decode(EditionTypes.self, "18 01 50 05 5a 02 01 06")
        #expect(!editions.hasClosedKind && editions.closedKinds == [.x])
        #expect(hex(editions.unknownFields.bytes) == "50 05 58 06")
    }

    @Test("An open enum keeps unknown values as UNRECOGNIZED(n) and writes them back")
    func openEnumUnrecognized() throws {
        let singular = try decode(AllTypes.self, "80 01 07")
        #expect(singular.color == .UNRECOGNIZED(7) && singular.unknownFields.isEmpty)
        #expect(try encoded(singular) == "80 01 07")
        #expect(try decode(AllTypes.self, "80 01 fd ff ff ff ff ff ff ff ff 01").color == .blue)  // -3

        let packed = try decode(AllTypes.self, "f2 02 02 01 09")
        #expect(packed.repeatedColor == [.red, .UNRECOGNIZED(9)])
        #expect(try encoded(packed) == "f2 02 02 01 09")

        let editions = try decode(EditionTypes.self, "18 01 48 05")
        #expect(editions.openKind == .UNRECOGNIZED(5))
    }

    @Test("A map entry whose closed-enum value is unknown is kept whole in unknown fields, as in C++")
    func closedEnumMapValue() throws {
        // tier_map = 33 (8a 02): {1: 7} names no Tier, {2: TIER_GOLD} does.
        let message = try decode(Proto2Types.self, "08 01  8a 02 04 08 01 10 07  8a 02 04 08 02 10 01")
        #expect(message.tierMap == [2: .gold])
        #expect(hex(message.unknownFields.bytes) == "8a 02 04 08 01 10 07")
        #expect(try encoded(message) == "08 01 8a 02 04 08 02 10 01 8a 02 04 08 01 10 07")
        // Dropped with the other unknown fields when asked.
        var options = DecodingOptions()
        options.discardUnknownFields = true
        let discarded = try decode(Proto2Types.self, "08 01  8a 02 04 08 01 10 07", options: options)
        #expect(discarded.tierMap.isEmpty && discarded.unknownFields.isEmpty)
    }

    // MARK: Groups

    @Test("proto2 groups round trip between START_GROUP and END_GROUP tags")
    func proto2Groups() throws {
        let message = Proto2Types.with {
            $0.id = 1
            $0.result = .with {
                $0.url = "u"
                $0.rank = 3
            }
            $0.item = [.with { $0.name = "a" }, .with { $0.name = "b" }]
        }
        // Result = 20: a3 01 ... a4 01; Item = 23: bb 01 ... bc 01.
        let wire = "08 01  a3 01 aa 01 01 75 b0 01 03 a4 01  bb 01 c2 01 01 61 bc 01  bb 01 c2 01 01 62 bc 01"
        #expect(try encoded(message) == hex(bytes(wire)))
        #expect(message.encodedSize() == bytes(wire).count)
        #expect(try decode(Proto2Types.self, wire) == message)
    }

    @Test("Editions DELIMITED messages are groups on the wire, unknown fields inside them kept")
    func delimitedEncoding() throws {
        let message = EditionTypes.with {
            $0.requiredNumber = 1
            $0.delimited = .with { $0.value = 5 }
            $0.delimitedList = [.with { $0.value = 1 }, .with { $0.note = "n" }]
        }
        let wire = "18 01  63 08 05 64  6b 08 01 6c  6b 12 01 6e 6c"
        #expect(try encoded(message) == hex(bytes(wire)))
        #expect(try decode(EditionTypes.self, wire) == message)

        // A field Inner does not know (9), and an unknown nested group (10), inside the group.
        let withUnknown = try decode(EditionTypes.self, "18 01  63 48 01 53 08 01 54 64")
        #expect(hex(withUnknown.delimited.unknownFields.bytes) == "48 01 53 08 01 54")
        #expect(try encoded(withUnknown) == "18 01 63 48 01 53 08 01 54 64")
    }

    // MARK: Required fields

    @Test("Decoding without a required field throws .missingRequiredFields unless partial: true")
    func requiredOnDecode() throws {
        let error = try #require(throws: ProtobufDecodingError.self) { try decode(Proto2Types.self, "10 01") }
        #expect(error.code == .missingRequiredFields)
        #expect(error.messageName == "pitlane.test.proto2.Proto2Types")
        let partial = try decode(Proto2Types.self, "10 01", partial: true)
        #expect(!partial.hasId && partial.count == 1)

        // A nested Child without its required name fails the whole message.
        let nested = try #require(throws: ProtobufDecodingError.self) { try decode(Proto2Types.self, "08 01 f2 01 00") }
        #expect(nested.code == .missingRequiredFields)
        // So does a group Item without its name, and LEGACY_REQUIRED in editions.
        #expect(throws: ProtobufDecodingError.self) { try decode(Proto2Types.self, "08 01 bb 01 bc 01") }
        #expect(throws: ProtobufDecodingError.self) { try decode(EditionTypes.self, "") }
        #expect(try decode(EditionTypes.self, "18 00").requiredNumber == 0)
    }

    @Test("serializedBytes() throws ProtobufEncodingError when a required field is missing; partial: true writes anyway")
    func requiredOnEncode() throws {
        let missing = Proto2Types.with { $0.count = 3 }
        let error = try #require(throws: ProtobufEncodingError.self) { try missing.serializedBytes() }
        #expect(error.messageName == "pitlane.test.proto2.Proto2Types")
        #expect(hex(try missing.serializedBytes(partial: true)) == "10 03")
        #expect(throws: ProtobufEncodingError.self) {
            try Proto2Types.with {
                $0.id = 1
                $0.child = Child()
            }.serializedBytes()
        }
    }

    @Test("isInitialized looks into children, repeated children, map values, groups and back-references")
    func isInitializedRecursion() {
        var message = Proto2Types.with { $0.id = 1 }
        #expect(message.isInitialized)

        message.child = Child()
        #expect(!message.isInitialized)
        message.child.name = "c"
        #expect(message.isInitialized)

        // Child.parent is a Proto2Types whose own `id` is required.
        message.child.parent = Proto2Types()
        #expect(!message.isInitialized)
        message.child.parent.id = 2
        #expect(message.isInitialized)

        message.children = [Child.with { $0.name = "a" }, Child()]
        #expect(!message.isInitialized)
        message.children[1].name = "b"
        #expect(message.isInitialized)

        message.childMap["k"] = Child()
        #expect(!message.isInitialized)
        message.childMap["k"]?.name = "v"
        #expect(message.isInitialized)

        message.item = [Proto2Types.Item()]
        #expect(!message.isInitialized)
        message.item[0].name = "i"
        #expect(message.isInitialized)
    }

    // MARK: Recursion, maps, sizes

    @Test("AllTypes.recursive nested 50 deep round trips")
    func recursive50Deep() throws {
        var message = AllTypes.with { $0.int32Value = 50 }
        for level in stride(from: 49, through: 0, by: -1) {
            let inner = message
            message = AllTypes.with {
                $0.int32Value = Int32(level)
                $0.recursive = inner
            }
        }
        let wire = try message.serializedBytes()
        let decoded = try AllTypes(serializedBytes: wire)
        #expect(decoded == message)
        var cursor = decoded
        for level in 0..<50 {
            #expect(cursor.int32Value == Int32(level) && cursor.hasRecursive)
            cursor = cursor.recursive
        }
        #expect(cursor.int32Value == 50 && !cursor.hasRecursive)
    }

    @Test("deterministic: true writes map entries in C++'s key order: signed ints, bytewise strings, false before true")
    func deterministicMapOrder() throws {
        let message = AllTypes.with {
            $0.mapStringInt32 = ["b": 1, "a": 2, "\u{E9}": 3, "ab": 4, "Z": 5]
            $0.mapInt32Nested = [5: .with { $0.a = 1 }, -1: .with { $0.a = 2 }, 0: .with { $0.a = 3 }]
            $0.mapBoolString = [true: "t", false: "f"]
            $0.mapInt64Color = [-5: .red, 5: .green]
            $0.mapUint32Double = [.max: 1.0, 7: 2.0]
            $0.mapSint64Sfixed32 = [3: 1, -3: 2]
            $0.mapFixed64String = [.max: "x", 1: "y"]
        }
        // Each entry: map tag, entry length, key (field 1), value (field 2). Bytes as C++ writes them.
        let expected = [
            // map_string_int32 = 51: "Z" (5a) < "a" < "ab" < "b" < "é" (c3 a9), by UTF-8 bytes
            "9a 03 05 0a 01 5a 10 05",
            "9a 03 05 0a 01 61 10 02",
            "9a 03 06 0a 02 61 62 10 04",
            "9a 03 05 0a 01 62 10 01",
            "9a 03 06 0a 02 c3 a9 10 03",
            // map_int32_nested = 52: -1 < 0 < 5 (signed, though -1 is the longest varint)
            "a2 03 0f 08 ff ff ff ff ff ff ff ff ff 01 12 02 08 02",
            "a2 03 06 08 00 12 02 08 03",
            "a2 03 06 08 05 12 02 08 01",
            // map_bool_string = 53: false < true
            "aa 03 05 08 00 12 01 66",
            "aa 03 05 08 01 12 01 74",
            // map_int64_color = 54: -5 < 5
            "b2 03 0d 08 fb ff ff ff ff ff ff ff ff 01 10 01",
            "b2 03 04 08 05 10 02",
            // map_uint32_double = 56: unsigned, 7 < 4294967295
            "c2 03 0b 08 07 11 00 00 00 00 00 00 00 40",
            "c2 03 0f 08 ff ff ff ff 0f 11 00 00 00 00 00 00 f0 3f",
            // map_sint64_sfixed32 = 57: -3 (ZigZag 05) < 3 (ZigZag 06)
            "ca 03 07 08 05 15 02 00 00 00",
            "ca 03 07 08 06 15 01 00 00 00",
            // map_fixed64_string = 58: 1 < 2^64 - 1
            "d2 03 0c 09 01 00 00 00 00 00 00 00 12 01 79",
            "d2 03 0c 09 ff ff ff ff ff ff ff ff 12 01 78",
        ].joined(separator: " ")
        #expect(try encoded(message, deterministic: true) == expected)
        #expect(try decode(AllTypes.self, expected) == message)
    }

    @Test("A map entry missing its key or value reads them as defaults; a repeated key keeps the last entry")
    func mapEntryDefaults() throws {
        // map_string_int32 = 51: {value 7} without a key, then {"k": 1}, then {"k": 2}.
        let message = try decode(AllTypes.self, "9a 03 02 10 07  9a 03 05 0a 01 6b 10 01  9a 03 05 0a 01 6b 10 02")
        #expect(message.mapStringInt32 == ["": 7, "k": 2])
        // C++ writes both key and value of every entry, defaults included.
        #expect(try encoded(AllTypes.with { $0.mapStringInt32 = ["": 0] }) == "9a 03 04 0a 00 10 00")
    }

    @Test("Map keys that differ only in Unicode normalization stay distinct, as in C++ and Python")
    func mapKeysAreByteStrings() throws {
        // Keys are ProtoStringKey, compared by UTF-8 bytes: "e\u{301}" (65 cc 81) and "\u{E9}"
        // (c3 a9) are two entries, though Swift's String == calls them equal.
        let wire = "9a 03 07 0a 03 65 cc 81 10 01  9a 03 06 0a 02 c3 a9 10 02"
        let message = try decode(AllTypes.self, wire)
        #expect(message.mapStringInt32.count == 2, "decoded \(message.mapStringInt32)")
        #expect(message.mapStringInt32["e\u{301}"] == 1 && message.mapStringInt32["\u{E9}"] == 2)
        #expect(try encoded(message, deterministic: true) == hex(bytes(wire)))
    }

    @Test("encodedSize() equals the number of bytes serializedBytes() writes")
    func encodedSizeMatches() throws {
        let all = try AllTypes.with {
            $0.int32Value = -1
            $0.sint64Value = .min
            $0.stringValue = String(repeating: "ü", count: 100)  // 200 bytes: a 2-byte length
            $0.bytesValue = Array(repeating: 7, count: 16_384)  // a 3-byte length
            $0.repeatedInt64 = [0, -1, .max, .min]
            $0.repeatedBool = [true, false]
            $0.repeatedFloat = [1, 2, 3]
            $0.repeatedNested = [Nested(), .with { $0.children = [Nested.with { $0.b = "deep" }] }]
            $0.mapInt32Nested = [-7: Nested(), 8: .with { $0.kind = .one }]
            $0.mapStringBytes = ["": [], "k": [1, 2, 3]]
            $0.choice = .choiceBytes([])
            $0.recursive = .with {
                $0.optionalDouble = 0
                $0.repeatedColor = [.blue, .UNRECOGNIZED(1000)]
            }
            $0.timestamp = .with {
                $0.seconds = 1_700_000_000
                $0.nanos = 5
            }
            $0.unknownFields = try AllTypes(serializedBytes: bytes("f8 ff ff ff 0f 01")).unknownFields
        }
        let proto2 = try decode(Proto2Types.self, "08 01  a3 01 aa 01 01 75 a4 01  bb 01 c2 01 00 bc 01  40 07  72 03 01 07 03")
        let editions = try decode(EditionTypes.self, "18 01  63 08 05 64  6b 6c  7a 07 0a 01 6b 12 02 08 01")
        #expect(all.encodedSize() == (try all.serializedBytes()).count)
        #expect(proto2.encodedSize() == (try proto2.serializedBytes()).count)
        #expect(editions.encodedSize() == (try editions.serializedBytes()).count)
        #expect(AllTypes().encodedSize() == 0)
    }

    @Test("Fields named like Swift keywords or generated members round trip")
    func keywordFields() throws {
        // class = 90 (d0 05), default = 91 (da 05), self = 92 (e0 05), unknown_fields = 93 (e8 05).
        let message = AllTypes.with {
            $0.`class` = 1
            $0.`default` = "d"
            $0.self_p = true
            $0.unknownFields_p = 2
        }
        #expect(try encoded(message) == "d0 05 01 da 05 01 64 e0 05 01 e8 05 02")
        let decoded = try decode(AllTypes.self, "d0 05 01 da 05 01 64 e0 05 01 e8 05 02")
        #expect(decoded == message)
        // `unknown_fields` must not land in the real unknown fields.
        #expect(decoded.unknownFields.isEmpty && decoded.unknownFields_p == 2)
    }

    @Test("The largest field number (2^29 - 1) is a legal unknown field")
    func largestFieldNumber() throws {
        let message = try decode(AllTypes.self, "f8 ff ff ff 0f 01")
        #expect(hex(message.unknownFields.bytes) == "f8 ff ff ff 0f 01")
        #expect(try encoded(message) == "f8 ff ff ff 0f 01")
    }
}
