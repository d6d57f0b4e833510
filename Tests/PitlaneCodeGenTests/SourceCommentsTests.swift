import PitlaneProtobuf
import Testing

@testable import PitlaneCodeGen

/// `.proto` comments become the generated code's doc comments.
@Suite("Source comments", .timeLimit(.minutes(1)))
struct SourceCommentsTests {
    @Test("a comment becomes doc-comment lines: protoc's leading space dropped, blank lines kept inside, trimmed at the ends")
    func docLines() {
        let comments = SourceComments(byPath: [
            [4, 0]: " A race.\n\n Laps count from 1.  \n",
            [4, 0, 2, 1]: "\n The kart's name.\n\n",
            [6, 0]: "no space",
        ])
        #expect(comments.docLines([4, 0]) == ["/// A race.", "///", "/// Laps count from 1."])
        #expect(comments.docLines([4, 0, 2, 1]) == ["/// The kart's name."])
        #expect(comments.docLines([6, 0]) == ["/// no space"])
        #expect(comments.docLines([4, 1]).isEmpty)
    }

    @Test("SourceCodeInfo is read with packed and unpacked paths; a leading comment wins over a trailing one")
    func parsing() throws {
        // SourceCodeInfo { location { path: [4, 0] (packed) leading_comments: " A" trailing_comments: " B" }
        //                  location { path: 6 path: 0 (unpacked) trailing_comments: " C" } }
        func field(_ number: Int, _ bytes: [UInt8]) -> [UInt8] { [UInt8(number << 3 | 2), UInt8(bytes.count)] + bytes }
        let first = field(1, [4, 0]) + field(3, Array(" A".utf8)) + field(4, Array(" B".utf8))
        let second: [UInt8] = [1 << 3, 6, 1 << 3, 0] + field(4, Array(" C".utf8))
        let info = field(1, first) + field(1, second)
        let comments = try info.withUnsafeBytes { try SourceComments(parsing: $0) }
        #expect(comments.docLines([4, 0]) == ["/// A"])
        #expect(comments.docLines([6, 0]) == ["/// C"])
    }
}
