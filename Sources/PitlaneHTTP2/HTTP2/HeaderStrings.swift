import Glibc

/// Header names and values that nearly every gRPC request carries, as the string literals they
/// equal: a received header that matches one costs no allocation (a literal needs no heap
/// storage, where a `String` made from 16 or more bytes does).
enum HeaderStrings {
    private static let common: [String] = [
        ":method", "POST", "GET", ":scheme", "http", "https", ":path", ":authority", ":status", "200",
        "content-type", "application/grpc", "application/grpc+proto", "te", "trailers",
        "grpc-timeout", "grpc-encoding", "grpc-accept-encoding", "accept-encoding", "user-agent",
        "identity", "gzip", "deflate", "identity,deflate,gzip", "identity,gzip,deflate",
        "grpc-status", "grpc-message", "0",
    ]

    /// Literals and their bytes by length (the index), so a lookup compares only strings that
    /// could match, with one memcmp each.
    private static let byLength: [[(bytes: [UInt8], string: String)]] = {
        var table = [[(bytes: [UInt8], string: String)]](repeating: [], count: common.map(\.utf8.count).max()! + 1)
        for literal in common { table[literal.utf8.count].append((Array(literal.utf8), literal)) }
        return table
    }()

    /// `bytes` as a `String`: a shared literal when they spell a common header, a new string
    /// otherwise.
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if bytes.count < byLength.count, let start = bytes.baseAddress {
            for candidate in byLength[bytes.count] where memcmp(candidate.bytes, start, bytes.count) == 0 {
                return candidate.string
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
