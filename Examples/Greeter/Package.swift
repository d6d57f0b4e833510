// swift-tools-version: 6.1
// The smallest gRPC program on Pitlane, and the proof that one which speaks gRPC over HTTP/2
// alone links only what that needs: it depends on PitlaneCore, PitlaneHTTP2 and
// PitlaneProtobuf, serves a greeter on 127.0.0.1, calls it (unary and bidirectional) from
// main-actor code that sets its own state inside `withGRPCClient`, and exits 0. `scripts/check-grpc-only` builds and runs it, then reads its NEEDED entries.
import PackageDescription

let package = Package(
    name: "Greeter",
    dependencies: [.package(name: "Pitlane", path: "../..")],
    targets: [
        .executableTarget(
            name: "greeter",
            dependencies: [
                .product(name: "PitlaneCore", package: "Pitlane"),
                .product(name: "PitlaneHTTP2", package: "Pitlane"),
                .product(name: "PitlaneProtobuf", package: "Pitlane"),
            ],
            plugins: [.plugin(name: "PitlaneGenerator", package: "Pitlane")]
        )
    ],
    swiftLanguageModes: [.v6]
)
