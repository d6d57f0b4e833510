import PitlaneProtobuf
import Testing

/// Text format and typed extensions through the Swift API; `ConformanceTests` checks both
/// against Python protobuf at scale.
@Suite("Text format and typed extensions", .timeLimit(.minutes(1)))
struct TextFormatTests {
    typealias Extensions = Pitlane_Test_Proto2_Proto2TypesExtensions

    @Test("textFormatString: fields in number order, nested blocks indented, strings escaped to ASCII")
    func printing() throws {
        let message = AllTypes.with {
            $0.int32Value = -5
            $0.stringValue = "é\"\n"
            $0.repeatedInt64 = [1, 2]
            $0.recursive = .with { $0.boolValue = true }
            $0.mapStringInt32 = ["b": 2, "a": 1]
        }
        let text = message.textFormatString()
        #expect(text.hasPrefix("int32_value: -5\n"), "\(text)")
        #expect(text.contains(#"string_value: "\303\251\"\n""#), "\(text)")
        #expect(text.contains("repeated_int64: 1\nrepeated_int64: 2\n"), "\(text)")
        #expect(text.contains("recursive {\n  bool_value: true\n}\n"), "\(text)")
        #expect(text.contains("map_string_int32 {\n  key: \"a\"\n  value: 1\n}\nmap_string_int32 {\n  key: \"b\""), "\(text)")
        #expect(try AllTypes(textFormatString: text) == message)
    }

    @Test("debugDescription: the type and its fields on one line")
    func debugDescription() {
        let message = AllTypes.with {
            $0.int32Value = 3
            $0.recursive = .with { $0.int32Value = 4 }
        }
        #expect(message.debugDescription == "pitlane.test.proto3.AllTypes { int32_value: 3 recursive { int32_value: 4 } }")
        #expect(String(reflecting: AllTypes()) == "pitlane.test.proto3.AllTypes {}")
    }

    @Test(
        "Errors name the problem and its line and column",
        arguments: [
            ("int32_value: 1\nnope: 2", "no field named \"nope\"", 2, 1),
            ("int32_value: 2147483648", "is not a valid Int32", 1, 14),
            ("int32_value: 1 int32_value: 2", "given twice", 1, 16),
            ("recursive { int32_value: 1", "missing its closing", 1, 27),
            ("string_value: \"abc", "closing quote", 1, 19),
        ])
    func errors(text: String, reason: String, line: Int, column: Int) {
        do {
            _ = try AllTypes(textFormatString: text)
            Issue.record("accepted \(text)")
        } catch let error as TextFormatDecodingError {
            #expect(error.reason.contains(reason), "\(error)")
            #expect((error.line, error.column) == (line, column), "\(error)")
            #expect(error.messageName == "pitlane.test.proto3.AllTypes")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("Typed extensions: get, set, has and clear; values round-trip through code that does not know them")
    func extensions() throws {
        var message = Proto2Types.with { $0.id = 1 }
        #expect(!message.hasExtension(Extensions.extraNumber) && message[extension: Extensions.extraNumber] == 0)
        message[extension: Extensions.extraNumber] = 42
        message[extension: Extensions.extraText] = "turbo"
        message[extension: Extensions.extraList] = [3, 1, 4]
        message[extension: Extensions.extraChild] = .with { $0.name = "kid" }
        #expect(message.hasExtension(Extensions.extraNumber))
        #expect(message[extension: Extensions.extraList] == [3, 1, 4])

        let decoded = try Proto2Types(serializedBytes: message.serializedBytes())
        #expect(decoded[extension: Extensions.extraNumber] == 42 && decoded[extension: Extensions.extraText] == "turbo")
        #expect(decoded[extension: Extensions.extraChild].name == "kid")
        #expect(try decoded.serializedBytes() == message.serializedBytes())

        message.clearExtension(Extensions.extraNumber)
        #expect(!message.hasExtension(Extensions.extraNumber) && message[extension: Extensions.extraText] == "turbo")
    }

    @Test("Extensions set in another order, or read in another order, compare equal and hash alike")
    func extensionOrder() throws {
        var first = Proto2Types()
        first[extension: Extensions.extraNumber] = 1
        first[extension: Extensions.extraText] = "a"
        first[extension: Extensions.extraList] = [1, 2]
        var second = Proto2Types()
        second[extension: Extensions.extraList] = [1, 2]
        second[extension: Extensions.extraText] = "a"
        second[extension: Extensions.extraNumber] = 1
        #expect(first == second && first.hashValue == second.hashValue)
        second[extension: Extensions.extraList] = [2, 1]
        #expect(first != second)
        // Two occurrences of one unknown field number keep their order: [1] then [2] is not [2] then [1].
        let ones = try Proto2Types(serializedBytes: [0x08, 0x01, 0xB0, 0x09, 0x01, 0xB0, 0x09, 0x02])
        let twos = try Proto2Types(serializedBytes: [0x08, 0x01, 0xB0, 0x09, 0x02, 0xB0, 0x09, 0x01])
        #expect(ones != twos)
        let mixed = try Proto2Types(serializedBytes: [0x08, 0x01, 0xB8, 0x09, 0x07, 0xB0, 0x09, 0x01, 0xB0, 0x09, 0x02])
        let sorted = try Proto2Types(serializedBytes: [0x08, 0x01, 0xB0, 0x09, 0x01, 0xB0, 0x09, 0x02, 0xB8, 0x09, 0x07])
        #expect(mixed == sorted)
    }

    @Test("Extensions in JSON and text format by [full.name], given an ExtensionMap")
    func extensionNames() throws {
        let map = ExtensionMap(Extensions.all)
        var message = Proto2Types.with { $0.id = 1 }
        message[extension: Extensions.extraNumber] = 7
        message[extension: Extensions.extraList] = [1, 2]

        var jsonOptions = JSONEncodingOptions()
        jsonOptions.extensions = map
        let json = try message.jsonString(options: jsonOptions)
        #expect(json == #"{"id":1,"[pitlane.test.proto2.extra_number]":7,"[pitlane.test.proto2.extra_list]":[1,2]}"#)
        var jsonInput = JSONDecodingOptions()
        jsonInput.extensions = map
        #expect(try Proto2Types(jsonString: json, options: jsonInput) == message)
        #expect(throws: ProtobufJSONError.self) { try Proto2Types(jsonString: json) }

        var textOptions = TextFormatEncodingOptions()
        textOptions.extensions = map
        let text = message.textFormatString(options: textOptions)
        #expect(
            text
                == "id: 1\n[pitlane.test.proto2.extra_number]: 7\n[pitlane.test.proto2.extra_list]: 1\n[pitlane.test.proto2.extra_list]: 2\n"
        )
        var textInput = TextFormatDecodingOptions()
        textInput.extensions = map
        #expect(try Proto2Types(textFormatString: text, options: textInput) == message)
        #expect(throws: TextFormatDecodingError.self) { try Proto2Types(textFormatString: text) }
    }

    @Test("Closed-enum extensions pass over numbers the enum does not name, singular and repeated, packed or not")
    func closedEnumExtensions() throws {
        var message = Proto2Types.with { $0.id = 1 }
        // 104: varint 99 (unknown) then 1; 105: 1, 99, 2 unpacked, then a packed run 3, 98.
        let wire: [UInt8] = [0xC0, 0x06, 99, 0xC0, 0x06, 1, 0xC8, 0x06, 1, 0xC8, 0x06, 99, 0xC8, 0x06, 2, 0xCA, 0x06, 2, 3, 98]
        wire.withUnsafeBytes { message.unknownFields.append($0) }
        #expect(message[extension: Extensions.extraSize] == .small)
        #expect(message[extension: Extensions.extraSizes] == [.small, .medium, .large])
    }

    @Test("An Any nested a thousand deep prints (unexpanded past 100 levels) and fails JSON with an error, never a crash")
    func deeplyNestedAny() throws {
        var any = Google_Protobuf_Any()
        for _ in 0..<1_000 { any = try Google_Protobuf_Any(message: any) }
        let text = any.textFormatString()
        #expect(text.contains("[type.googleapis.com/google.protobuf.Any]") && text.contains("type_url:"))
        #expect(throws: ProtobufJSONError.self) { try any.jsonString() }
    }
}
