import Foundation
import PitlaneHTTP2
import PitlaneWeb

/// The browser app (races, order tracker, chat): plain HTML, CSS and JavaScript in
/// `Static/`, which SwiftPM copies beside the executables (`PitlaneServices_WebApp.resources`); read
/// once at startup.
public enum WebApp {
    /// The folder SwiftPM puts beside each executable, with the pages in it.
    public static let bundleName = "PitlaneServices_WebApp.resources"

    /// Every file of the app, for ``HTTP2ServerTransport/Config/staticFiles``: from `root`
    /// when given, else from the resources beside the running executable. nil when there is
    /// no such folder (an executable copied without its resources): the server then serves
    /// its RPCs only.
    public static func files(root: String? = nil) throws -> StaticFiles? {
        let executable = URL(
            filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        let candidates =
            [root].compactMap { $0 }
            + [executable.deletingLastPathComponent().appending(path: bundleName).appending(path: "Static").path]
        guard let folder = candidates.first(where: { isDirectory($0) }) else { return nil }
        let base = URL(filePath: folder).standardizedFileURL.path
        var files: [String: [UInt8]] = [:]
        let walker = FileManager.default.enumerator(atPath: base)
        while let relative = walker?.nextObject() as? String {
            let path = base + "/" + relative
            guard !isDirectory(path) else { continue }
            files[relative] = Array(try Data(contentsOf: URL(filePath: path)))
        }
        return StaticFiles(files)
    }

    private static func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }
}
