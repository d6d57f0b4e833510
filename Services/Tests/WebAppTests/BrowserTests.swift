import Foundation
import TestSupport
import Testing

/// The web app in a real browser: headless Chromium, driven by selenium
/// (Tests/Peers/browser_peer.py), against `swiftkart-server` and `orders-server` started from
/// the built executables: the live race map, the order screen across a server restart, and
/// two browser pages chatting with a gRPC client in one order.
@Suite("Web app in headless Chromium", .timeLimit(.minutes(5)))
struct BrowserTests {
    @Test("races, orders and chat pages in Chromium")
    func browser() async throws {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let beside = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent()
        let binaries =
            FileManager.default.isExecutableFile(atPath: beside.appending(path: "orders-server").path)
            ? beside.path : root.appending(path: ".build/debug").path
        var arguments = [root.appending(path: "Tests/Peers/browser_peer.py").path, "--bin", binaries]
        if let directory = ProcessInfo.processInfo.environment["PITLANE_SCREENSHOTS"] { arguments += ["--screenshots", directory] }
        let (status, output) = try await runProcess(root.appending(path: ".venv/bin/python").path, arguments, limit: .seconds(240))
        #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
    }
}
