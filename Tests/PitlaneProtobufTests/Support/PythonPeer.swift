import Foundation
import TestSupport

/// Runs the repository's Python peers (from `.venv`) and the record files they exchange.
enum PythonPeer {
    static let repositoryRoot = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let python = repositoryRoot.appending(path: ".venv/bin/python")
    static let protobufPeer = repositoryRoot.appending(path: "Tests/Peers/protobuf_peer.py")
    static let testProtos = repositoryRoot.appending(path: "Tests/PitlaneProtobufTests/Protos")

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs the peer script and returns what it printed; a non-zero exit throws with its output.
    @discardableResult
    static func run(_ arguments: [String]) async throws -> String {
        let (status, text) = try await runProcess(python.path, [protobufPeer.path] + arguments)
        guard status == 0 else {
            throw Failure(description: "protobuf_peer.py \(arguments.first ?? "") exited \(status):\n\(text)")
        }
        return text
    }

    /// A record of the exchange files: the type Python filled, the type to decode as, bytes.
    struct Record {
        var typeName: String
        var decodeAs: String
        var payload: [UInt8]
    }

    static func readRecords(_ url: URL) throws -> [Record] {
        let data = [UInt8](try Data(contentsOf: url))
        var offset = 0
        func field() -> [UInt8] {
            let length = Int(data[offset]) | Int(data[offset + 1]) << 8 | Int(data[offset + 2]) << 16 | Int(data[offset + 3]) << 24
            defer { offset += 4 + length }
            return Array(data[(offset + 4)..<(offset + 4 + length)])
        }
        var records: [Record] = []
        while offset < data.count {
            let name = String(decoding: field(), as: UTF8.self)
            let decodeAs = String(decoding: field(), as: UTF8.self)
            records.append(Record(typeName: name, decodeAs: decodeAs, payload: field()))
        }
        return records
    }

    static func writeRecords(_ records: [Record], to url: URL) throws {
        var data: [UInt8] = []
        for record in records {
            for field in [Array(record.typeName.utf8), Array(record.decodeAs.utf8), record.payload] {
                withUnsafeBytes(of: UInt32(field.count).littleEndian) { data.append(contentsOf: $0) }
                data.append(contentsOf: field)
            }
        }
        try Data(data).write(to: url)
    }

    /// A fresh temporary folder, removed by the caller.
    static func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appending(path: "pitlane-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
