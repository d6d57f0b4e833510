import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf

/// The Connect protocol's own pieces: error codes by name, their HTTP statuses, the error
/// body of unary calls and the end-of-stream message of streaming ones.
package enum ConnectWire {
    /// The protocol's names for status codes, indexed by gRPC's number.
    package static let codeNames = [
        "ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
        "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
        "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated",
    ]

    /// The HTTP status of a unary call that failed with `code`.
    package static func httpStatus(for code: Status.Code) -> Int {
        switch code {
        case .ok: 200
        case .cancelled: 499
        case .invalidArgument, .failedPrecondition, .outOfRange: 400
        case .deadlineExceeded: 504
        case .notFound: 404
        case .alreadyExists, .aborted: 409
        case .permissionDenied: 403
        case .resourceExhausted: 429
        case .unimplemented: 501
        case .unavailable: 503
        case .unauthenticated: 401
        default: 500  // unknown, internal, data_loss
        }
    }

    /// `{"code": "...", "message": "...", "details": [...]}`: a unary call's error body, or the
    /// `error` member of an end-of-stream message. The details are those of the
    /// `google.rpc.Status` in `trailers`' `grpc-status-details-bin` (rich errors), each as
    /// `{"type": "google.rpc.ErrorInfo", "value": "<base64>"}`.
    package static func writeError(_ status: Status, trailers: Metadata, to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("code")
        writer.writeString(codeNames[status.code.rawValue])
        if !status.message.isEmpty {
            writer.key("message")
            writer.writeString(status.message)
        }
        let details = trailers[binaryValues: Metadata.statusDetailsKey].first.map(statusDetails) ?? []
        if !details.isEmpty {
            writer.key("details")
            writer.beginArray()
            for detail in details {
                writer.separate()
                writer.beginObject()
                writer.key("type")
                writer.writeString(String(detail.typeURL.split(separator: "/").last ?? ""))
                writer.key("value")
                writer.writeString(Base64.encode(detail.value, padded: false))
                writer.endObject()
            }
            writer.endArray()
        }
        writer.endObject()
    }

    package static func errorBody(_ status: Status, trailers: Metadata) -> [UInt8] {
        var writer = JSONWriter()
        writeError(status, trailers: trailers, to: &writer)
        return writer.utf8Bytes
    }

    /// The `details` (field 3: `google.protobuf.Any`, type URL 1 and value 2) of a serialized
    /// `google.rpc.Status`; none when it does not parse.
    package static func statusDetails(_ bytes: [UInt8]) -> [(typeURL: String, value: [UInt8])] {
        var details: [(typeURL: String, value: [UInt8])] = []
        let parsed: Bool = bytes.withUnsafeBytes { buffer in
            var reader = ProtoReader(buffer)
            do {
                while let tag = try reader.nextTag() {
                    guard tag.fieldNumber == 3, tag.wireType == .lengthDelimited else {
                        try reader.skipField(tag)
                        continue
                    }
                    var any = ProtoReader(try reader.readLengthDelimited())
                    var detail = (typeURL: "", value: [UInt8]())
                    while let field = try any.nextTag() {
                        switch (field.fieldNumber, field.wireType) {
                        case (1, .lengthDelimited): detail.typeURL = String(decoding: try any.readLengthDelimited(), as: UTF8.self)
                        case (2, .lengthDelimited): detail.value = Array(try any.readLengthDelimited())
                        default: try any.skipField(field)
                        }
                    }
                    details.append(detail)
                }
                return true
            } catch {
                return false
            }
        }
        return parsed ? details : []
    }

    /// The end-of-stream message's JSON: the error unless OK, and the trailers as metadata.
    package static func endOfStream(_ status: Status, trailers: Metadata) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        if status.code != .ok {
            writer.key("error")
            writeError(status, trailers: trailers, to: &writer)
        }
        let fields = trailers.headerFields
        if !fields.isEmpty {
            writer.key("metadata")
            writer.beginObject()
            var names: [String] = []
            for field in fields where !names.contains(field.name) { names.append(field.name) }
            for name in names {
                writer.key(name)
                writer.beginArray()
                for field in fields where field.name == name {
                    writer.separate()
                    writer.writeString(field.value)
                }
                writer.endArray()
            }
            writer.endObject()
        }
        writer.endObject()
        return writer.utf8Bytes
    }
}

/// gRPC-Web's pieces: the trailers frame and the base64 of `application/grpc-web-text`.
package enum GRPCWebWire {
    /// The flag byte of the frame that carries trailers.
    package static let trailersFlag: UInt8 = 0x80

    /// Trailers as the body's last frame: `name: value` lines in an HTTP/1 header block.
    package static func trailersFrame(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var block: [UInt8] = []
        for field in fields {
            block.append(contentsOf: field.name.utf8)
            block.append(contentsOf: ": ".utf8)
            block.append(contentsOf: field.value.utf8)
            block.append(contentsOf: "\r\n".utf8)
        }
        var frame = MessageFramer.prefix(length: block.count, compressed: false)
        frame[0] = trailersFlag
        return frame + block
    }
}
