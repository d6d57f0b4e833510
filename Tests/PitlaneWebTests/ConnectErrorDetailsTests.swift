import PitlaneCore
import PitlaneHTTP2
import Testing

@testable import PitlaneWeb

@Suite("Connect error details", .timeLimit(.minutes(1)))
struct ConnectErrorDetailsTests {
    /// google.rpc.Status { code: 5, details: [Any { type_url: ".../google.rpc.ErrorInfo", value: ErrorInfo { reason: "x" } }] }
    static func statusBytes() -> [UInt8] {
        let typeURL = Array("type.googleapis.com/google.rpc.ErrorInfo".utf8)
        let any: [UInt8] = [0x0A, UInt8(typeURL.count)] + typeURL + [0x12, 0x03, 0x0A, 0x01, 0x78]
        return [0x08, 0x05, 0x1A, UInt8(any.count)] + any
    }

    @Test("grpc-status-details-bin becomes Connect's details: the type name and the value in base64")
    func details() {
        var trailers = Metadata()
        trailers.addBinary(Self.statusBytes(), forKey: Metadata.statusDetailsKey)
        let body = String(decoding: ConnectWire.errorBody(Status(code: .notFound, message: "gone"), trailers: trailers), as: UTF8.self)
        #expect(body == #"{"code":"not_found","message":"gone","details":[{"type":"google.rpc.ErrorInfo","value":"CgF4"}]}"#)
    }

    @Test("no details, or details that do not parse, leave the body as it was")
    func none() {
        #expect(
            String(decoding: ConnectWire.errorBody(Status(code: .internal, message: ""), trailers: [:]), as: UTF8.self)
                == #"{"code":"internal"}"#)
        var broken = Metadata()
        broken.addBinary([0x1A, 0x7F], forKey: Metadata.statusDetailsKey)
        #expect(
            String(decoding: ConnectWire.errorBody(Status(code: .internal, message: ""), trailers: broken), as: UTF8.self)
                == #"{"code":"internal"}"#)
    }
}
