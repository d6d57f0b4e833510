import Foundation
import Testing

/// Every Swift sample in the documentation's articles (`Sources/*/*.docc/*.md`) is code this
/// target or an example package compiles: each ```` ```swift ```` block must appear, line by
/// line (indentation and blank lines aside), in a Swift file of `Tests/DocumentationTests` or
/// `Examples/`. A sample that drifts from the API stops compiling here, and a sample edited in
/// an article alone fails this test.
@Suite("The articles' code samples", .timeLimit(.minutes(1)))
struct ArticleSampleTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("every Swift block of every article is compiled code")
    func samplesAreCompiled() throws {
        let compiled = try Self.files(under: ["Tests/DocumentationTests", "Examples"], extension: "swift").map(Self.normalizedLines)
        var samples = 0
        var missing: [String] = []
        for article in try Self.files(under: ["Sources"], extension: "md") where article.path.contains(".docc/") {
            for block in Self.swiftBlocks(in: try String(contentsOf: article, encoding: .utf8)) {
                samples += 1
                let lines = Self.normalizedLines(block)
                if !compiled.contains(where: { Self.contains($0, lines) }) {
                    missing.append("\(article.lastPathComponent): \(lines.first ?? "")")
                }
            }
        }
        #expect(samples >= 20, "the articles show \(samples) Swift samples")
        #expect(missing.isEmpty, "samples not found in compiled code:\n\(missing.joined(separator: "\n"))")
    }

    /// The files with `extension` under each of `directories` (relative to the root), builds aside.
    static func files(under directories: [String], extension: String) throws -> [URL] {
        directories.flatMap { directory -> [URL] in
            let enumerator = FileManager.default.enumerator(at: root.appending(path: directory), includingPropertiesForKeys: nil)
            return (enumerator?.allObjects as? [URL] ?? []).filter {
                $0.pathExtension == `extension` && !$0.path.contains("/.build/")
            }
        }
    }

    static func normalizedLines(_ file: URL) throws -> [String] {
        normalizedLines(try String(contentsOf: file, encoding: .utf8))
    }

    static func normalizedLines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The contents of the ```` ```swift ```` blocks of a Markdown text.
    static func swiftBlocks(in markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```swift" {
                current = []
            } else if let lines = current, trimmed == "```" {
                blocks.append(lines.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// Whether `lines` occur in `file`, one after another.
    static func contains(_ file: [String], _ lines: [String]) -> Bool {
        guard !lines.isEmpty, lines.count <= file.count else { return lines.isEmpty }
        return (0...(file.count - lines.count)).contains { start in
            file[start..<(start + lines.count)].elementsEqual(lines)
        }
    }
}
