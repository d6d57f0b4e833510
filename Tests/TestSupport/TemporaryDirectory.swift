import Foundation

/// Runs `body` with a new empty directory, removed with everything in it afterwards.
public func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory()
    return try await body(directory.path)
}

/// A new empty directory under /tmp, removed with everything in it when this goes away.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init() throws {
        var template = Array("/tmp/pitlane-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mkdtemp failed: errno \(errno)"])
        }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
