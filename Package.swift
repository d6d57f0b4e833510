// swift-tools-version: 6.1
import PackageDescription

/// A system library reached through pkg-config, installed by `scripts/bootstrap` from Debian.
func systemLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "Pitlane",
    products: [
        .library(name: "PitlaneProtobuf", targets: ["PitlaneProtobuf"]),
        .library(name: "PitlaneCore", targets: ["PitlaneCore"]),
        .library(name: "PitlanePosix", targets: ["PitlanePosix"]),
        .library(name: "PitlaneHTTP2", targets: ["PitlaneHTTP2"]),
        .library(name: "PitlaneWeb", targets: ["PitlaneWeb"]),
        .library(name: "Pitlane", targets: ["Pitlane"]),
        .library(name: "PitlaneHealth", targets: ["PitlaneHealth"]),
        .library(name: "PitlaneReflection", targets: ["PitlaneReflection"]),
        .library(name: "PitlaneErrorDetails", targets: ["PitlaneErrorDetails"]),
        .library(name: "PitlaneObservability", targets: ["PitlaneObservability"]),
        .library(name: "PitlaneSQL", targets: ["PitlaneSQL"]),
        .library(name: "PitlaneSQLite", targets: ["PitlaneSQLite"]),
        .library(name: "PitlanePostgres", targets: ["PitlanePostgres"]),
        .library(name: "PitlaneLive", targets: ["PitlaneLive"]),
        .executable(name: "protoc-gen-pitlane", targets: ["protoc-gen-pitlane"]),
        .plugin(name: "PitlaneGenerator", targets: ["PitlaneGenerator"]),
    ],
    targets: [
        // C libraries: a module map and a header each, no code.
        systemLibrary("CNGHTTP2", pkgConfig: "libnghttp2", apt: ["libnghttp2-dev"]),
        systemLibrary("COpenSSL", pkgConfig: "openssl", apt: ["libssl-dev"]),
        systemLibrary("CZlib", pkgConfig: "zlib", apt: ["zlib1g-dev"]),
        systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
        systemLibrary("CLibPQ", pkgConfig: "libpq", apt: ["libpq-dev"]),
        // HTTP/1.1 requests (Debian's libhttp-parser; no pkg-config file, so linked by name).
        .systemLibrary(name: "CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),
        .systemLibrary(name: "CLinux"),  // epoll, eventfd, accept4: in libc, not in Swift's Glibc

        // Protocol Buffers: runtime, generator library, protoc plugin, SwiftPM build plugin.
        .target(name: "PitlaneProtobuf"),
        .target(name: "PitlaneCodeGen", dependencies: ["PitlaneProtobuf"]),

        // gRPC: the transport-agnostic runtime; event loops, sockets and TLS; HTTP/2 over them.
        .target(name: "PitlaneCore", dependencies: ["PitlaneProtobuf"]),
        .target(name: "PitlanePosix", dependencies: ["PitlaneCore", "CLinux", "COpenSSL"]),
        .target(name: "PitlaneHTTP2", dependencies: ["PitlaneCore", "PitlanePosix", "CNGHTTP2", "CZlib"]),
        // The web beside gRPC on the same port: HTTP/1.1, gRPC-Web, Connect, CORS, WebSocket.
        .target(
            name: "PitlaneWeb",
            dependencies: ["PitlaneCore", "PitlaneHTTP2", "PitlanePosix", "PitlaneProtobuf", "CHTTPParser", "COpenSSL"]),
        .executableTarget(name: "protoc-gen-pitlane", dependencies: ["PitlaneCodeGen"]),
        .plugin(
            name: "PitlaneGenerator",
            capability: .buildTool(),
            dependencies: ["protoc-gen-pitlane"]
        ),

        // The umbrella: `import Pitlane` brings the protobuf runtime, the core, HTTP/2 and the web.
        .target(name: "Pitlane", dependencies: ["PitlaneCore", "PitlaneHTTP2", "PitlaneWeb", "PitlaneProtobuf"]),

        // Services every server can mount: grpc.health.v1.
        .target(name: "PitlaneHealth", dependencies: ["PitlaneCore", "PitlaneProtobuf"], plugins: ["PitlaneGenerator"]),
        // Rich errors: google.rpc.Status and the standard detail types in grpc-status-details-bin.
        .target(name: "PitlaneErrorDetails", dependencies: ["PitlaneCore", "PitlaneProtobuf"], plugins: ["PitlaneGenerator"]),
        // Metrics (Prometheus text, gRPC's OpenTelemetry names) for servers and clients; tracing.
        .target(
            name: "PitlaneObservability", dependencies: ["PitlaneCore", "PitlaneHTTP2", "PitlaneWeb", "PitlaneHealth", "PitlaneProtobuf"],
            plugins: ["PitlaneGenerator"]),
        // gRPC server reflection (v1 and v1alpha) from the descriptors the generator embeds.
        .target(name: "PitlaneReflection", dependencies: ["PitlaneCore", "PitlaneProtobuf"], plugins: ["PitlaneGenerator"]),
        // The services' databases: one interface (PitlaneSQL) over SQLite, embedded, and
        // PostgreSQL through libpq, shared by replicas.
        .target(name: "PitlaneSQL", dependencies: ["PitlaneCore"]),
        .target(name: "PitlaneSQLite", dependencies: ["CSQLite", "PitlaneSQL"]),
        .target(name: "PitlanePostgres", dependencies: ["CLibPQ", "PitlaneSQL"]),

        // Live feeds: the snapshot-then-resumable-updates pattern (resume tokens with an epoch,
        // announcements across replicas, the typed errors a subscription ends with).
        .target(name: "PitlaneLive", dependencies: ["PitlaneCore", "PitlaneErrorDetails", "PitlaneProtobuf", "PitlaneSQL"]),

        .testTarget(
            name: "SystemLibraryTests",
            dependencies: ["CNGHTTP2", "COpenSSL", "CZlib", "CSQLite", "CLibPQ"]
        ),
        // Fixtures shared by the test targets: the echo service and its .proto.
        .target(
            name: "TestSupport",
            dependencies: ["PitlaneCore", "PitlaneProtobuf", "PitlaneSQL", "PitlaneSQLite", "PitlanePostgres"],
            path: "Tests/TestSupport",
            plugins: ["PitlaneGenerator"]
        ),
        .testTarget(
            name: "PitlaneCoreTests",
            dependencies: ["PitlaneCore", "PitlaneProtobuf", "TestSupport"]
        ),
        .testTarget(
            name: "PitlanePosixTests",
            dependencies: ["PitlanePosix", "PitlaneCore", "TestSupport"]
        ),
        .testTarget(
            name: "PitlaneHTTP2Tests",
            dependencies: ["PitlaneHTTP2", "PitlaneCore", "PitlaneProtobuf", "TestSupport"]
        ),
        .testTarget(name: "PitlaneErrorDetailsTests", dependencies: ["PitlaneErrorDetails", "PitlaneCore"]),
        .testTarget(name: "PitlaneHealthTests", dependencies: ["PitlaneHealth", "PitlaneCore"]),
        .testTarget(name: "PitlaneSQLTests", dependencies: ["PitlaneSQL", "PitlaneSQLite", "PitlaneCore"]),
        .testTarget(name: "PitlaneCodeGenTests", dependencies: ["PitlaneCodeGen"]),
        .testTarget(
            name: "PitlaneLiveTests",
            dependencies: ["PitlaneLive", "PitlaneCore", "PitlaneErrorDetails", "PitlaneSQL", "TestSupport"]
        ),
        .testTarget(
            name: "PitlaneWebTests",
            dependencies: ["PitlaneWeb", "PitlaneHTTP2", "PitlaneCore", "PitlaneProtobuf", "TestSupport"]
        ),
        .testTarget(
            name: "PitlaneObservabilityTests",
            dependencies: [
                "PitlaneObservability", "PitlaneReflection", "PitlaneErrorDetails", "PitlaneCore", "PitlaneHTTP2", "TestSupport",
            ]
        ),
        .testTarget(
            name: "SeedPortTests",
            dependencies: ["PitlaneCore", "PitlaneProtobuf"],
            plugins: ["PitlaneGenerator"]
        ),
        // Counts heap allocations for AllocationTests by interposing malloc in the test executable.
        .target(name: "AllocationCounter", path: "Tests/AllocationCounter"),
        .testTarget(
            name: "AllocationTests",
            dependencies: ["AllocationCounter", "PitlaneCore", "PitlaneHTTP2", "TestSupport"]
        ),
        .testTarget(
            name: "PitlaneProtobufTests",
            dependencies: ["PitlaneProtobuf", "TestSupport"],
            plugins: ["PitlaneGenerator"]
        ),
        // The articles' code samples (Sources/Pitlane/Pitlane.docc), compiled, checked against
        // the articles, and the testing article's tests run.
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "Pitlane", "PitlaneObservability", "PitlaneHealth", "PitlaneReflection", "PitlaneErrorDetails", "PitlaneLive",
                "PitlaneSQLite",
            ],
            plugins: ["PitlaneGenerator"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
