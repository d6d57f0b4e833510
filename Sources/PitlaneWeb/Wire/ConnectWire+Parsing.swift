import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

extension ConnectWire {
    /// A unary error body, `{"code": …, "message": …}`; nil when it is not one.
    static func parseError(_ bytes: [UInt8]) -> Status? {
        var reader = JSONReader(bytes: bytes)
        return try? readError(&reader)
    }

    /// An end-of-stream message: the status (OK without `error`) and the trailers.
    static func parseEndOfStream(_ bytes: [UInt8]) -> (Status, Metadata) {
        var reader = JSONReader(bytes: bytes)
        var status = Status.ok
        var trailers = Metadata()
        do {
            try reader.beginObject()
            while let key = try reader.nextKey() {
                switch key {
                case "error": status = try readError(&reader)
                case "metadata":
                    try reader.beginObject()
                    while let name = try reader.nextKey() {
                        try reader.beginArray()
                        while try reader.nextElement() { trailers.addHeaderField(name: name.lowercased(), value: try reader.readString()) }
                    }
                default: try reader.skipValue()
                }
            }
        } catch {
            return (Status(code: .internal, message: "the end-of-stream message is not valid JSON: \(error)"), [:])
        }
        return (status, trailers)
    }

    private static func readError(_ reader: inout JSONReader) throws -> Status {
        var code = Status.Code.unknown
        var message = ""
        try reader.beginObject()
        while let key = try reader.nextKey() {
            switch key {
            case "code":
                let name = try reader.readString()
                code = codeNames.firstIndex(of: name).flatMap { Status.Code(rawValue: $0) } ?? .unknown
            case "message": message = try reader.readString()
            default: try reader.skipValue()  // details: not surfaced yet
            }
        }
        return Status(code: code, message: message)
    }
}

extension GRPCWebWire {
    /// A trailers frame's `name: value` lines; names lower-cased.
    static func parseTrailers(_ block: [UInt8]) -> [(name: String, value: String)] {
        String(decoding: block, as: UTF8.self).split(whereSeparator: { $0 == "\r\n" || $0 == "\n" }).compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: " "))
        }
    }
}
