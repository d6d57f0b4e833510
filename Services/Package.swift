// swift-tools-version: 6.1
// What is built on Pitlane and lives beside it: the services (SwiftKart's races, the order
// tracker, the chat room, the web app), their servers and command-line clients, their load
// drivers, the benchmark programs, and the gRPC interop and protobuf conformance programs,
// with their tests. It depends on the library package at the repository's root by path, as an
// application would; `make test` builds and tests both.
import PackageDescription

/// A library product of the Pitlane package.
func pitlane(_ name: String) -> Target.Dependency {
    .product(name: name, package: "Pitlane")
}

let generator = Target.PluginUsage.plugin(name: "PitlaneGenerator", package: "Pitlane")

let package = Package(
    name: "PitlaneServices",
    dependencies: [.package(name: "Pitlane", path: "..")],
    targets: [
        // What the executables share: options, transport flags, termination signals.
        .target(
            name: "PitlaneCommandLine",
            dependencies: [
                pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneWeb"), pitlane("PitlaneHealth"),
                pitlane("PitlaneObservability"), pitlane("PitlaneSQL"), pitlane("PitlaneSQLite"), pitlane("PitlanePostgres"),
            ]
        ),

        // The browser app (races, order tracker, chat), served by the servers from their port.
        .target(name: "WebApp", dependencies: [pitlane("PitlaneWeb")], resources: [.copy("Static")]),

        // SwiftKart: the race schedule and live races (`make run`), its server and its client.
        .target(
            name: "SwiftKart",
            dependencies: [
                pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneProtobuf"), pitlane("PitlaneSQL"),
                pitlane("PitlaneSQLite"), pitlane("PitlaneLive"),
            ],
            plugins: [generator]
        ),
        .executableTarget(
            name: "swiftkart-server",
            dependencies: [
                "SwiftKart", "PitlaneCommandLine", "WebApp", pitlane("PitlaneHealth"), pitlane("PitlaneReflection"),
                pitlane("PitlaneObservability"), pitlane("Pitlane"),
            ]
        ),
        .executableTarget(
            name: "swiftkart", dependencies: ["SwiftKart", "PitlaneCommandLine", pitlane("PitlaneObservability"), pitlane("Pitlane")]),

        // The live order tracker and the chat room: durable logs in SQLite, resumable streams,
        // the reconnecting client (OrderStreamStore); one server for both, and their clients.
        .target(
            name: "Orders",
            dependencies: [
                pitlane("PitlaneCore"), pitlane("PitlaneProtobuf"), pitlane("PitlaneSQL"), pitlane("PitlaneSQLite"),
                pitlane("PitlaneErrorDetails"), pitlane("PitlaneLive"),
            ],
            plugins: [generator]
        ),
        .target(
            name: "LiveChat",
            dependencies: [
                "Orders", pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneWeb"), pitlane("PitlaneProtobuf"),
                pitlane("PitlaneSQL"), pitlane("PitlaneSQLite"), pitlane("PitlaneLive"),
            ],
            plugins: [generator]
        ),
        .executableTarget(
            name: "orders-server",
            dependencies: [
                "Orders", "LiveChat", "PitlaneCommandLine", "WebApp", pitlane("PitlaneHealth"), pitlane("PitlaneReflection"),
                pitlane("PitlaneObservability"), pitlane("Pitlane"),
            ]
        ),
        .executableTarget(
            name: "orders",
            dependencies: ["Orders", "PitlaneCommandLine", pitlane("PitlaneObservability"), pitlane("PitlaneLive"), pitlane("Pitlane")]
        ),
        .executableTarget(name: "chat", dependencies: ["LiveChat", "PitlaneCommandLine", pitlane("Pitlane")]),

        // Benchmark drivers (`make bench`).
        .executableTarget(
            name: "pitlane-protobuf-bench",
            dependencies: [pitlane("PitlaneProtobuf")],
            path: "Benchmarks/ProtobufBench",
            plugins: [generator]
        ),
        .executableTarget(
            name: "pitlane-bench-server",
            dependencies: [
                pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneWeb"), pitlane("PitlaneObservability"),
                pitlane("PitlaneProtobuf"),
            ],
            path: "Benchmarks/GRPCBench",
            plugins: [generator]
        ),
        .executableTarget(
            name: "pitlane-bench-client",
            dependencies: [pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneProtobuf")],
            path: "Benchmarks/GRPCBenchClient",
            plugins: [generator]
        ),
        .executableTarget(
            name: "swiftkart-load",
            dependencies: ["SwiftKart", "PitlaneCommandLine", pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneProtobuf")],
            path: "Benchmarks/SwiftKartLoad"
        ),
        .executableTarget(
            name: "orders-load",
            dependencies: ["Orders", "PitlaneCommandLine", pitlane("PitlaneCore"), pitlane("PitlaneHTTP2")],
            path: "Benchmarks/OrdersLoad"
        ),

        // The testee of protobuf's conformance suite (Google's runner, or Tests/Peers/conformance_peer.py).
        .executableTarget(name: "pitlane-conformance-testee", dependencies: [pitlane("PitlaneProtobuf")], plugins: [generator]),

        // gRPC's interoperability tests: grpc.testing.TestService, the client's test cases, and
        // thin executables over them.
        .target(
            name: "PitlaneInterop",
            dependencies: [
                pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneProtobuf"), pitlane("PitlaneHealth"),
                pitlane("PitlaneReflection"), pitlane("PitlaneObservability"),
            ],
            plugins: [generator]
        ),
        .executableTarget(name: "pitlane-interop-server", dependencies: ["PitlaneInterop", pitlane("PitlaneHTTP2")]),
        .executableTarget(name: "pitlane-interop-client", dependencies: ["PitlaneInterop"]),

        // The root package's test fixtures (Tests/TestSupport, linked here): servers as processes,
        // databases, peers.
        .target(
            name: "TestSupport",
            dependencies: [
                pitlane("PitlaneCore"), pitlane("PitlaneProtobuf"), pitlane("PitlaneSQL"), pitlane("PitlaneSQLite"),
                pitlane("PitlanePostgres"),
            ],
            path: "Tests/TestSupport",
            plugins: [generator]
        ),
        // The orders server as the services' tests start it (it serves the chat rooms too).
        .target(
            name: "ServiceHarness",
            dependencies: [
                "Orders", "LiveChat", "TestSupport", pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneSQL"),
                pitlane("PitlaneSQLite"), pitlane("PitlanePostgres"),
            ],
            path: "Tests/ServiceHarness"
        ),
        .testTarget(
            name: "SwiftKartTests",
            dependencies: [
                "SwiftKart", "TestSupport", "swiftkart-server", "swiftkart", pitlane("PitlaneHealth"), pitlane("PitlaneCore"),
                pitlane("PitlaneHTTP2"), pitlane("PitlaneProtobuf"), pitlane("PitlaneSQL"),
            ]
        ),
        .testTarget(
            name: "OrdersTests",
            dependencies: [
                "Orders", "LiveChat", "TestSupport", "ServiceHarness", "orders-server", "orders", pitlane("PitlaneHealth"),
                pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"), pitlane("PitlaneProtobuf"), pitlane("PitlaneSQL"),
                pitlane("PitlaneSQLite"), pitlane("PitlanePostgres"), pitlane("PitlaneLive"),
            ]
        ),
        .testTarget(
            name: "LiveChatTests",
            dependencies: [
                "LiveChat", "Orders", "TestSupport", "ServiceHarness", "orders-server", pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"),
                pitlane("PitlaneSQL"), pitlane("PitlaneSQLite"),
            ]
        ),
        .testTarget(name: "WebAppTests", dependencies: ["TestSupport", "swiftkart-server", "orders-server", "orders", "chat"]),
        .testTarget(
            name: "OperatorTests",
            dependencies: [
                "TestSupport", "swiftkart-server", "orders-server", "pitlane-interop-server", "swiftkart", "orders",
                pitlane("PitlaneCore"), pitlane("PitlaneHTTP2"),
            ]
        ),
        .testTarget(
            name: "InteropTests",
            dependencies: ["PitlaneInterop", "TestSupport", pitlane("PitlaneHTTP2"), pitlane("PitlaneCore")]
        ),
        .testTarget(name: "ConformanceTests", dependencies: ["TestSupport", "pitlane-conformance-testee"]),
        .testTarget(
            name: "CommandLineTests",
            dependencies: [
                "swiftkart-server", "swiftkart", "orders-server", "orders", "chat", "swiftkart-load", "orders-load",
                "pitlane-bench-server", "pitlane-bench-client", "pitlane-protobuf-bench", "pitlane-interop-server",
                "pitlane-interop-client", "pitlane-conformance-testee",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
