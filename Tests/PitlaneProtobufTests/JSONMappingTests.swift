import PitlaneProtobuf
import Testing

/// The proto3 JSON mapping's rules for input, case by case (the conformance suite's names).
@Suite("JSON mapping: what must be rejected", .timeLimit(.minutes(1)))
struct JSONMappingTests {
    @Test("OneofFieldDuplicate: two members of one oneof are rejected; one, or a null and one, are not")
    func oneofDuplicate() throws {
        #expect(throws: ProtobufJSONError.self) {
            try AllTypes(jsonString: #"{"choiceUint32": 1, "choiceString": "test"}"#)
        }
        #expect(try AllTypes(jsonString: #"{"choiceUint32": 1}"#).choice == .choiceUint32(1))
        #expect(try AllTypes(jsonString: #"{"choiceUint32": null, "choiceString": "a"}"#).choice == .choiceString("a"))
    }

    @Test("Timestamps need an upper-case T and Z", arguments: ["1970-01-01t00:00:00Z", "1970-01-01T00:00:00z"])
    func timestampCase(text: String) throws {
        #expect(throws: ProtobufJSONError.self) { try AllTypes(jsonString: #"{"timestamp": "\#(text)"}"#) }
        #expect(try AllTypes(jsonString: #"{"timestamp": "1970-01-01T00:00:01Z"}"#).timestamp.seconds == 1)
    }

    @Test("FieldMask paths in JSON are lowerCamelCase: an underscore is rejected")
    func fieldMaskUnderscore() throws {
        #expect(throws: ProtobufJSONError.self) { try AllTypes(jsonString: #"{"fieldMask": "foo,bar_bar"}"#) }
        #expect(try AllTypes(jsonString: #"{"fieldMask": "foo,barBar"}"#).fieldMask.paths == ["foo", "bar_bar"])
    }
}
