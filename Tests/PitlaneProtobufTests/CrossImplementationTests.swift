import Foundation
import PitlaneProtobuf
import Testing

/// Python protobuf (upb) fills seeded random messages of every test type; Pitlane decodes
/// them and re-encodes deterministically, and Python checks the bytes.
@Suite("Wire format against Python protobuf", .timeLimit(.minutes(5)))
struct CrossImplementationTests {
    /// Every top-level message of the test protos, by protobuf name.
    static let types: [String: any Message.Type] = Dictionary(
        uniqueKeysWithValues: ([
            Pitlane_Test_Proto3_AllTypes.self, Pitlane_Test_Proto3_Nested.self, Pitlane_Test_Proto3_Subset.self,
            Pitlane_Test_Proto2_Proto2Types.self, Pitlane_Test_Proto2_Child.self,
            Pitlane_Test_Editions_EditionTypes.self, Pitlane_Test_Edition2023_Edition2023Types.self,
            ListRacesRequest.self, ListRacesResponse.self, Race.self, FollowRaceRequest.self,
            FollowRaceResponse.self, KartLocations.self, Standings.self,
            Pitlane_Test_Collisions_Type.self, Pitlane_Test_Collisions_String.self, Pitlane_Test_Collisions_Message.self,
            Pitlane_Test_Collisions_Choices.self,
        ] as [any Message.Type]).map { ($0.protoMessageName, $0) })

    @Test("1,000 random messages per type: Python encodes, Pitlane decodes and re-encodes byte-identically")
    func randomMessagesRoundTrip() async throws {
        let folder = try PythonPeer.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let corpus = folder.appending(path: "corpus.bin")
        let results = folder.appending(path: "results.bin")
        let protos = PythonPeer.testProtos.path

        try await PythonPeer.run(["generate", "--protos", protos, "--out", corpus.path, "--count", "1000", "--seed", "2026"])
        let records = try PythonPeer.readRecords(corpus)
        #expect(Set(records.map(\.typeName)) == Set(Self.types.keys))

        let reencoded = try records.map { record in
            let type = try #require(Self.types[record.decodeAs], "no Swift type for \(record.decodeAs)")
            var out = record
            out.payload = try Self.reencode(type, record.payload)
            return out
        }
        try PythonPeer.writeRecords(reencoded, to: results)
        let verdict = try await PythonPeer.run(["verify", "--protos", protos, "--corpus", corpus.path, "--results", results.path])
        #expect(verdict.contains("records: \(records.count) matched, 0 differed"), "\(verdict)")
    }

    @Test("300 random messages per type as JSON: Python writes, Pitlane reads and writes, Python reads")
    func randomMessagesJSON() async throws {
        let folder = try PythonPeer.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let corpus = folder.appending(path: "corpus.bin")
        let results = folder.appending(path: "results.bin")
        let protos = PythonPeer.testProtos.path

        try await PythonPeer.run(["generate-json", "--protos", protos, "--out", corpus.path, "--count", "300", "--seed", "2027"])
        let records = try PythonPeer.readRecords(corpus)
        let answers = try records.map { record in
            let type = try #require(Self.types[record.typeName], "no Swift type for \(record.typeName)")
            let (json, binary) = try Self.convertJSON(type, record.decodeAs)
            return PythonPeer.Record(typeName: record.typeName, decodeAs: json, payload: binary)
        }
        try PythonPeer.writeRecords(answers, to: results)
        let verdict = try await PythonPeer.run(["verify-json", "--protos", protos, "--corpus", corpus.path, "--results", results.path])
        #expect(verdict.contains("records: \(records.count) matched, 0 differed"), "\(verdict)")
    }

    @Test("Delimited streams: Python writes _VarintBytes(len) + bytes and Pitlane reads; Pitlane writes, Python reads")
    func delimitedStreams() async throws {
        let folder = try PythonPeer.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let pythonStream = folder.appending(path: "python.delimited")
        let records = folder.appending(path: "records.bin")
        let pitlaneStream = folder.appending(path: "pitlane.delimited")
        let protos = PythonPeer.testProtos.path

        try await PythonPeer.run([
            "generate-delimited", "--protos", protos, "--type", AllTypes.protoMessageName,
            "--out", pythonStream.path, "--records", records.path, "--count", "200", "--seed", "2028",
        ])
        let expected = try PythonPeer.readRecords(records).map { try AllTypes(serializedBytes: $0.payload) }
        #expect(expected.count == 202)
        #expect(expected.contains { $0.encodedSize() >= 16384 }, "one size should take three bytes")
        let wire = [UInt8](try Data(contentsOf: pythonStream))
        #expect(try Self.canonical([AllTypes](delimitedBytes: wire)) == Self.canonical(expected))

        // The same stream arriving in 1,000-byte slices.
        let (chunks, continuation) = AsyncStream.makeStream(of: ArraySlice<UInt8>.self)
        for start in stride(from: 0, to: wire.count, by: 1000) {
            continuation.yield(wire[start..<min(start + 1000, wire.count)])
        }
        continuation.finish()
        var streamed: [AllTypes] = []
        for try await message in chunks.delimitedMessages(of: AllTypes.self) {
            streamed.append(message)
        }
        #expect(try Self.canonical(streamed) == Self.canonical(expected))

        try Data(try expected.serializedDelimitedBytes()).write(to: pitlaneStream)
        let verdict = try await PythonPeer.run([
            "verify-delimited", "--protos", protos, "--records", records.path, "--stream", pitlaneStream.path,
        ])
        #expect(verdict.contains("messages: \(expected.count) matched, 0 differed"), "\(verdict)")
    }

    /// Each message's deterministic encoding: messages holding NaN are unequal to themselves,
    /// their bytes are not.
    static func canonical(_ messages: [AllTypes]) throws -> [[UInt8]] {
        try messages.map { try $0.serializedBytes(options: EncodingOptions(deterministic: true)) }
    }

    /// Parses Python's JSON; returns Pitlane's JSON and binary encodings of the result.
    static func convertJSON<M: Message>(_ type: M.Type, _ json: String) throws -> (String, [UInt8]) {
        let message = try M(jsonString: json, options: jsonOptions)
        var encoding = JSONEncodingOptions()
        encoding.typeRegistry = jsonOptions.typeRegistry
        return (try message.jsonString(options: encoding), try message.serializedBytes(options: EncodingOptions(deterministic: true)))
    }

    static let jsonOptions: JSONDecodingOptions = {
        var options = JSONDecodingOptions()
        options.typeRegistry = MessageTypeRegistry(Array(types.values))
        return options
    }()

    /// Decodes, encodes deterministically, and checks that decoding Pitlane's own bytes
    /// gives the same bytes again (equality would not do: NaN is unequal to itself).
    static func reencode<M: Message>(_ type: M.Type, _ bytes: [UInt8]) throws -> [UInt8] {
        let deterministic = EncodingOptions(deterministic: true)
        let encoded = try M(serializedBytes: bytes).serializedBytes(options: deterministic)
        #expect(try M(serializedBytes: encoded).serializedBytes(options: deterministic) == encoded)
        #expect(try M(serializedBytes: bytes).encodedSize() == encoded.count)
        return encoded
    }
}
