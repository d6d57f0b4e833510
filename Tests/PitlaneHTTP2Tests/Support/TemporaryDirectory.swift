import Glibc
import PitlaneHTTP2

/// Runs `body` with a new empty directory, removed with its entries afterwards.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    var template = Array("/tmp/pitlane-http2-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
        throw SocketError(call: "mkdtemp", errno: errno)
    }
    let path = String(cString: made)
    defer { removeDirectory(path) }
    return try await body(path)
}

private func removeDirectory(_ path: String) {
    if let directory = opendir(path) {
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { unlink("\(path)/\(name)") }
        }
        closedir(directory)
    }
    rmdir(path)
}
