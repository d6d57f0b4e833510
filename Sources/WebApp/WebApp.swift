import Foundation
import PitlaneHTTP2

/// The browser app (races, order tracker, chat): plain HTML, CSS and JavaScript in
/// `Static/`, shipped as the package's resources and read once at startup.
public enum WebApp {
    /// Every file of the app, for ``HTTP2ServerTransport/Config/staticFiles``.
    public static func files() throws -> StaticFiles {
        guard let root = Bundle.module.url(forResource: "Static", withExtension: nil) else {
            throw WebAppMissing(description: "the web app's files are not beside the executable (\(Bundle.module.bundlePath))")
        }
        var files: [String: [UInt8]] = [:]
        let base = root.standardizedFileURL.path
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = walker?.nextObject() as? URL {
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
            let path = url.standardizedFileURL.path
            files[String(path.dropFirst(base.count + 1))] = Array(try Data(contentsOf: url))
        }
        return StaticFiles(files)
    }

    public struct WebAppMissing: Error, CustomStringConvertible {
        public var description: String
    }
}
