import PitlaneProtobuf
import Testing

/// proto2 `string` fields are not verified: bytes that are not UTF-8 read as their repaired
/// `String` and are written back as they came, as C++ keeps them (`InvalidUTF8Strings`).
@Suite("Unverified strings keep invalid UTF-8", .timeLimit(.minutes(1)))
struct InvalidUTF8Tests {
    typealias Message = Pitlane_Test_Proto2_Proto2Types

    static func field(_ tag: [UInt8], _ payload: [UInt8]) -> [UInt8] {
        tag + [UInt8(payload.count)] + payload
    }

    /// id 1, then (in field order, as this runtime writes them) label, notes, child_map and
    /// pick_name, each holding ill-formed sequences: a stray continuation byte, an overlong
    /// encoding, a surrogate, a truncated sequence.
    static let payload: [UInt8] =
        [0x08, 0x01]
        + field([0x1A], [0xFF, 0xFE] + Array("abc".utf8))
        + field([0x7A], [0xC3, 0x28]) + field([0x7A], Array("ok".utf8)) + field([0x7A], [0xED, 0xA0, 0x80])
        + field([0x82, 0x02], field([0x0A], [0xFE, 0x61]) + field([0x12], field([0x0A], Array("a".utf8))))
        + field([0x82, 0x02], field([0x0A], [0xFF, 0x61]) + field([0x12], field([0x0A], Array("b".utf8))))
        + field([0xC2, 0x02], [0xF0, 0x9F, 0x98])

    @Test("binary: every invalid string reads repaired and is written back byte for byte")
    func binaryRoundTrip() throws {
        let message = try Message(serializedBytes: Self.payload)
        #expect(message.label == "\u{FFFD}\u{FFFD}abc")
        #expect(message.notes == ["\u{FFFD}(", "ok", "\u{FFFD}\u{FFFD}\u{FFFD}"])
        #expect(message.pickName == "\u{FFFD}")
        #expect(message.childMap.count == 2)
        #expect(message.unknownFields.invalidUTF8.bytes(of: message.label, fieldNumber: 3) == [0xFF, 0xFE, 0x61, 0x62, 0x63])
        #expect(message.unknownFields.invalidUTF8.bytes(of: "ok", fieldNumber: 15, index: 1) == nil)
        #expect(message.unknownFields.bytes.isEmpty)
        let encoded = try message.serializedBytes(options: .init(deterministic: true))
        #expect(encoded == Self.payload)
        #expect(message.encodedSize() == Self.payload.count)
    }

    @Test("a value set after decoding is written as set; one set back to the repaired form keeps the bytes")
    func mutation() throws {
        var message = try Message(serializedBytes: Self.payload)
        message.label = "new"
        message.notes[0] = "fresh"
        let reread = try Message(serializedBytes: try message.serializedBytes())
        #expect(reread.label == "new" && reread.notes[0] == "fresh")
        #expect(reread.unknownFields.invalidUTF8.bytes(of: "new", fieldNumber: 3) == nil)
        // The third note and the oneof were not touched: their bytes survive.
        #expect(reread.unknownFields.invalidUTF8.bytes(of: reread.notes[2], fieldNumber: 15, index: 2) == [0xED, 0xA0, 0x80])
        #expect(reread.unknownFields.invalidUTF8.bytes(of: reread.pickName, fieldNumber: 40) == [0xF0, 0x9F, 0x98])
        message.label = "\u{FFFD}\u{FFFD}abc"
        message.notes[0] = "\u{FFFD}("
        #expect(try message.serializedBytes(options: .init(deterministic: true)) == Self.payload)
    }

    @Test("map keys that differ only in invalid bytes stay two entries, ordered by their bytes")
    func mapKeys() throws {
        let message = try Message(serializedBytes: Self.payload)
        let keys = message.childMap.keys.sorted { left, right in
            left.withBytes { a in right.withBytes { b in a.lexicographicallyPrecedes(b) } }
        }
        #expect(keys.map(\.invalidUTF8) == [[0xFE, 0x61], [0xFF, 0x61]])
        #expect(keys.map(\.string) == ["\u{FFFD}a", "\u{FFFD}a"])
        #expect(keys[0] != keys[1])
        #expect(message.childMap[keys[1]]?.name == "b")
        var key = keys[0]
        key.string = "plain"
        #expect(key.invalidUTF8 == nil && key == ProtoStringKey("plain"))
    }

    @Test("map values: each entry's invalid bytes are kept under its key; a value set since is written as set")
    func mapValues() throws {
        // map<int32, string> labels = 34: entries 1 → FF, 2 → "ok", 3 → C0 AF.
        let entries =
            Self.field([0x92, 0x02], [0x08, 0x01] + Self.field([0x12], [0xFF]))
            + Self.field([0x92, 0x02], [0x08, 0x02] + Self.field([0x12], Array("ok".utf8)))
            + Self.field([0x92, 0x02], [0x08, 0x03] + Self.field([0x12], [0xC0, 0xAF]))
        var message = try Message(serializedBytes: [0x08, 0x01] + entries)
        #expect(message.labels == [1: "\u{FFFD}", 2: "ok", 3: "\u{FFFD}\u{FFFD}"])
        #expect(try message.serializedBytes(options: .init(deterministic: true)) == [0x08, 0x01] + entries)
        #expect(message.encodedSize() == 2 + entries.count)
        message.labels[3] = "new"
        let reread = try Message(serializedBytes: try message.serializedBytes())
        #expect(
            reread.labels[3] == "new"
                && reread.unknownFields.invalidUTF8.bytes(ofMapValue: reread.labels[1]!, key: 1, ProtoInt32.self, fieldNumber: 34) == [0xFF]
        )
    }

    @Test("equality sees the bytes: messages with different invalid bytes differ")
    func equality() throws {
        let first = try Message(serializedBytes: [0x08, 0x01] + Self.field([0x1A], [0xFF]))
        let second = try Message(serializedBytes: [0x08, 0x01] + Self.field([0x1A], [0xFE]))
        #expect(first.label == second.label)
        #expect(first != second)
        #expect(first == (try Message(serializedBytes: [0x08, 0x01] + Self.field([0x1A], [0xFF]))))
    }

    @Test("merging: a valid value read later replaces the invalid one and its record")
    func merge() throws {
        var message = try Message(serializedBytes: [0x08, 0x01] + Self.field([0x1A], [0xFF]))
        try message.merge(serializedBytes: Self.field([0x1A], Array("ok".utf8)))
        #expect(message.label == "ok")
        #expect(message.unknownFields.invalidUTF8.isEmpty)
    }

    @Test("text format: octal escapes that are not UTF-8 are kept and printed back")
    func textFormat() throws {
        let message = try Message(
            textFormatString:
                #"id: 1 label: "\377x" notes: ["\300\257", "ok"] pick_name: "\355\240\200" child_map { key: "\376" value { name: "c" } }"#)
        #expect(message.label == "\u{FFFD}x")
        let binary = try message.serializedBytes(options: .init(deterministic: true))
        #expect(binary.starts(with: [0x08, 0x01] + Self.field([0x1A], [0xFF, 0x78])))
        let text = message.textFormatString()
        #expect(text.contains(#"label: "\377x""#))
        #expect(text.contains(#"notes: "\300\257""#))
        #expect(text.contains(#"key: "\376""#))
        #expect(try Message(textFormatString: text) == message)
    }
}
