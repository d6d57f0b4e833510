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
        .executable(name: "swiftkart-server", targets: ["swiftkart-server"]),
        .executable(name: "swiftkart", targets: ["swiftkart"]),
        .executable(name: "orders-server", targets: ["orders-server"]),
        .executable(name: "orders", targets: ["orders"]),
        .executable(name: "chat", targets: ["chat"]),
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
        // WebSocket framing (Debian's libwslay; no pkg-config file, so linked by name).
        .systemLibrary(name: "CWslay", providers: [.apt(["libwslay-dev"])]),
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
            dependencies: ["PitlaneCore", "PitlaneHTTP2", "PitlanePosix", "PitlaneProtobuf", "CHTTPParser", "CWslay", "COpenSSL"]),
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

        // What the executables share: options, transport flags, termination signals.
        .target(
            name: "PitlaneCommandLine",
            dependencies: [
                "PitlaneCore", "PitlaneHTTP2", "PitlaneWeb", "PitlaneHealth", "PitlaneObservability",
                "PitlaneSQL", "PitlaneSQLite", "PitlanePostgres",
            ]),

        // The browser app (races, order tracker, chat), served by the servers from their port.
        .target(name: "WebApp", dependencies: ["PitlaneWeb"], resources: [.copy("Static")]),

        // SwiftKart: the race schedule and live races (`make run`), its server and its client.
        .target(
            name: "SwiftKart",
            dependencies: ["PitlaneCore", "PitlaneHTTP2", "PitlaneProtobuf", "PitlaneSQL", "PitlaneSQLite"],
            plugins: ["PitlaneGenerator"]
        ),
        .executableTarget(
            name: "swiftkart-server",
            dependencies: [
                "SwiftKart", "PitlaneHealth", "PitlaneReflection", "PitlaneObservability", "PitlaneCommandLine", "Pitlane", "WebApp",
            ]),
        .executableTarget(name: "swiftkart", dependencies: ["SwiftKart", "PitlaneCommandLine", "PitlaneObservability", "Pitlane"]),

        // The live order tracker and the chat room: durable logs in SQLite, resumable streams,
        // the reconnecting client (OrderStreamStore); one server for both, and their clients.
        .target(
            name: "Orders",
            dependencies: ["PitlaneCore", "PitlaneProtobuf", "PitlaneSQL", "PitlaneSQLite", "PitlaneErrorDetails"],
            plugins: ["PitlaneGenerator"]
        ),
        .target(
            name: "LiveChat",
            dependencies: ["Orders", "PitlaneCore", "PitlaneHTTP2", "PitlaneWeb", "PitlaneProtobuf", "PitlaneSQL", "PitlaneSQLite"],
            plugins: ["PitlaneGenerator"]
        ),
        .executableTarget(
            name: "orders-server",
            dependencies: [
                "Orders", "LiveChat", "PitlaneCommandLine", "PitlaneHealth", "PitlaneReflection", "PitlaneObservability", "Pitlane",
                "WebApp",
            ]),
        .executableTarget(name: "orders", dependencies: ["Orders", "PitlaneCommandLine", "PitlaneObservability", "Pitlane"]),
        .executableTarget(name: "chat", dependencies: ["LiveChat", "PitlaneCommandLine", "Pitlane"]),

        // Benchmark drivers (`make bench`).
        .executableTarget(
            name: "pitlane-protobuf-bench",
            dependencies: ["PitlaneProtobuf"],
            path: "Benchmarks/ProtobufBench",
            plugins: ["PitlaneGenerator"]
        ),

        .executableTarget(
            name: "pitlane-bench-server",
            dependencies: ["PitlaneCore", "PitlaneHTTP2", "PitlaneWeb", "PitlaneObservability", "PitlaneProtobuf"],
            path: "Benchmarks/GRPCBench",
            plugins: ["PitlaneGenerator"]
        ),

        .executableTarget(
            name: "pitlane-bench-client",
            dependencies: ["PitlaneCore", "PitlaneHTTP2", "PitlaneProtobuf"],
            path: "Benchmarks/GRPCBenchClient",
            plugins: ["PitlaneGenerator"]
        ),

        // The testee of protobuf's conformance suite (Google's runner, or Tests/Peers/conformance_peer.py).
        .executableTarget(
            name: "pitlane-conformance-testee",
            dependencies: ["PitlaneProtobuf"],
            plugins: ["PitlaneGenerator"]
        ),

        .executableTarget(
            name: "swiftkart-load",
            dependencies: ["SwiftKart", "PitlaneCommandLine", "PitlaneCore", "PitlaneHTTP2", "PitlaneProtobuf"],
            path: "Benchmarks/SwiftKartLoad"
        ),

        .executableTarget(
            name: "orders-load",
            dependencies: ["Orders", "PitlaneCommandLine", "PitlaneCore", "PitlaneHTTP2"],
            path: "Benchmarks/OrdersLoad"
        ),

        // gRPC's interoperability tests: grpc.testing.TestService, the client's test cases, and
        // thin executables over them.
        .target(
            name: "PitlaneInterop",
            dependencies: ["PitlaneCore", "PitlaneHTTP2", "PitlaneProtobuf", "PitlaneHealth", "PitlaneReflection", "PitlaneObservability"],
            plugins: ["PitlaneGenerator"]
        ),
        .executableTarget(name: "pitlane-interop-server", dependencies: ["PitlaneInterop", "PitlaneHTTP2"]),
        .executableTarget(name: "pitlane-interop-client", dependencies: ["PitlaneInterop"]),

        .testTarget(
            name: "SystemLibraryTests",
            dependencies: ["CNGHTTP2", "COpenSSL", "CZlib", "CSQLite", "CLibPQ"]
        ),
        // Fixtures shared by the test targets: the echo service and its .proto.
        .target(
            name: "TestSupport",
            dependencies: ["PitlaneCore", "PitlaneProtobuf", "PitlaneSQL", "PitlaneSQLite", "PitlanePostgres", "CLinux"],
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
            name: "PitlaneWebTests",
            dependencies: ["PitlaneWeb", "PitlaneHTTP2", "PitlaneCore", "PitlaneProtobuf", "TestSupport"]
        ),
        .testTarget(
            name: "SwiftKartTests",
            dependencies: [
                "SwiftKart", "PitlaneHealth", "PitlaneCore", "PitlaneHTTP2", "PitlaneProtobuf", "TestSupport", "swiftkart-server",
                "swiftkart",
                "PitlaneSQL",
            ]
        ),
        .testTarget(
            name: "InteropTests",
            dependencies: ["PitlaneInterop", "PitlaneHTTP2", "PitlaneCore", "TestSupport"]
        ),
        .testTarget(
            name: "OrdersTests",
            dependencies: [
                "Orders", "LiveChat", "PitlaneHealth", "PitlaneCore", "PitlaneHTTP2", "PitlaneProtobuf", "TestSupport", "ServiceHarness",
                "orders-server", "orders", "PitlaneSQL", "PitlaneSQLite", "PitlanePostgres",
            ]
        ),
        .testTarget(
            name: "CommandLineTests",
            dependencies: [
                "swiftkart-server", "swiftkart", "orders-server", "orders", "chat", "swiftkart-load", "orders-load",
                "pitlane-bench-server", "pitlane-bench-client", "pitlane-protobuf-bench", "pitlane-interop-server",
                "pitlane-interop-client", "pitlane-conformance-testee",
            ]
        ),
        .testTarget(
            name: "LiveChatTests",
            dependencies: ["LiveChat", "Orders", "PitlaneCore", "PitlaneHTTP2", "TestSupport", "ServiceHarness", "orders-server"]
        ),
        // The orders server as the services' tests start it (it serves the chat rooms too).
        .target(
            name: "ServiceHarness",
            dependencies: [
                "Orders", "LiveChat", "PitlaneCore", "PitlaneHTTP2", "PitlaneSQL", "PitlaneSQLite", "PitlanePostgres", "TestSupport",
            ],
            path: "Tests/ServiceHarness"
        ),
        .testTarget(
            name: "PitlaneObservabilityTests",
            dependencies: [
                "PitlaneObservability", "PitlaneReflection", "PitlaneErrorDetails", "PitlaneCore", "PitlaneHTTP2", "TestSupport",
                "swiftkart-server", "orders-server", "pitlane-interop-server", "swiftkart", "orders",
            ]
        ),
        .testTarget(
            name: "WebAppTests",
            dependencies: ["TestSupport", "swiftkart-server", "orders-server", "orders", "chat"]
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
            dependencies: ["PitlaneProtobuf", "TestSupport", "pitlane-conformance-testee"],
            plugins: ["PitlaneGenerator"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
