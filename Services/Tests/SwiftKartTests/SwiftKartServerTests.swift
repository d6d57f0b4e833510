import Foundation
import PitlaneCore
import PitlaneHTTP2
import PitlaneHealth
import PitlaneProtobuf
import SwiftKart
import TestSupport
import Testing

/// The built `swiftkart-server`, a real process on 127.0.0.1, judged by Pitlane's client and
/// by Python grpcio with stubs it generates itself from Protos/swiftkart.proto.
@Suite("swiftkart-server end to end", .timeLimit(.minutes(5)))
struct SwiftKartServerTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let server = root.appending(path: ".build/debug/swiftkart-server").path

    /// Runs `body` against a fresh server on a database in a temporary directory.
    func withServer<T: Sendable>(
        database: String? = nil, speed: Double = 40, arguments: [String] = [],
        _ body: (ServerProcess, SwiftKartService.Client<HTTP2ClientTransport>) async throws -> T
    ) async throws -> T {
        let directory = try TemporaryDirectory()
        let path = database ?? directory.path + "/swiftkart.sqlite"
        let process = try await ServerProcess.start(Self.server, ["--port", "0", "--database", path, "--speed", String(speed)] + arguments)
        do {
            let result = try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: process.port)))
            {
                try await body(process, SwiftKartService.Client(wrapping: $0))
            }
            let (status, log) = await process.stop()
            #expect(status == 0, "\(log)")
            return result
        } catch {
            await process.stop()
            throw error
        }
    }

    @Test("ListRaces: an explicit limit, the default, and limits of zero or less; in start-time order", arguments: TestBackend.allCases)
    func listRaces(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        try await withServer(database: try await backend.databaseArgument(in: directory)) { _, kart in
            let five = try await kart.listRaces(.with { $0.limit = 5 }).races
            #expect(five.count == 5)
            let all = try await kart.listRaces(ListRacesRequest()).races
            #expect(all.count == 22)
            #expect(all.map(\.startTime.seconds) == all.map(\.startTime.seconds).sorted())
            #expect(Set(all.map(\.championship)).count >= 4)
            #expect(Array(all.prefix(5)) == five)
            for limit in [0, -3, .max] as [Int32] {
                let races = try await kart.listRaces(.with { $0.limit = limit }).races
                #expect(races == all, "limit \(limit)")
            }
            let dash = try #require(all.first { $0.name == "Duck Pond Dash" })
            #expect(dash.location == "Apple Park, Cupertino" && dash.laps == 6 && dash.championship == "Corporate Cup")
            #expect(dash.drivers == ["Monty", "Pepper", "Mycroft", "Pancakes", "Duke", "Kiko", "Sissi", "Bo"])
            #expect(dash.startTime.seconds == 1_781_198_600)
        }
    }

    @Test("the database survives a restart: a race added to it is listed by two server lives", arguments: TestBackend.allCases)
    func databaseSurvivesRestart(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        defer { withExtendedLifetime(directory) {} }
        let path = try await backend.databaseArgument(in: directory)
        try RaceDB(database: TestBackend.open(path)).save(
            ScheduledRace(
                name: "Test Track Trophy", location: "Paddock, Nürburgring", latitude: 50.3356, longitude: 6.9475,
                startTime: 1_700_000_000, laps: 3, championship: "Test Series", drivers: ["Ada", "Grace"]))
        for _ in 1...2 {
            let races = try await withServer(database: path) { _, kart in try await kart.listRaces(ListRacesRequest()).races }
            #expect(races.count == 23)
            #expect(races.first?.name == "Test Track Trophy")
            #expect(races.first?.drivers == ["Ada", "Grace"])
        }
    }

    @Test("follow a race to the finish: every standings update is consistent and the stream ends OK")
    func followToTheFinish() async throws {
        try await withServer(speed: 40) { _, kart in
            // The request stream stays open until the race is over: a half-close would end the RPC.
            let (raceOver, over) = AsyncStream.makeStream(of: Never.self)
            let (check, locations) = try await kart.followRace { writer in
                try await writer.write(
                    .with {
                        $0.raceName = "Duck Pond Dash"
                        $0.eventTypes = [.kartLocations, .standings]
                    })
                for await _ in raceOver {}
            } onResponse: { response in
                defer { over.finish() }
                var check = StandingsCheck(karts: 8, laps: 6)
                var locations = 0
                for try await message in response.messages {
                    switch message.event {
                    case .locations(let update):
                        locations += 1
                        #expect(update.karts.map(\.number).sorted() == Array(1...8))
                        #expect(update.karts.allSatisfy { $0.recordedAt.seconds > 1_700_000_000 })
                    case .standings(let standings): check.check(standings)
                    case nil: Issue.record("an event with neither locations nor standings")
                    }
                }
                return (check, locations)
            }
            #expect(check.everyKartFinished)
            #expect(locations > 10 && check.updates >= 3, "\(locations) locations, \(check.updates) standings")
        }
    }

    @Test("FollowRace errors: an unknown race is NOT_FOUND, an empty name INVALID_ARGUMENT")
    func followErrors() async throws {
        try await withServer { _, kart in
            for (name, code) in [("Nowhere 500", RPCError.Code.notFound), ("", .invalidArgument)] {
                await #expect {
                    try await kart.followRace { writer in
                        try await writer.write(
                            .with {
                                $0.raceName = name
                                $0.eventTypes = [.standings]
                            })
                    } onResponse: { response in
                        for try await _ in response.messages {}
                    }
                } throws: { ($0 as? RPCError)?.code == code }
            }
        }
    }

    @Test("the health service reports SERVING for the server and for SwiftKartService")
    func health() async throws {
        try await withServer { process, _ in
            try await withGRPCClient(transport: try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: process.port))) { client in
                let health = Grpc_Health_V1_Health.Client(wrapping: client)
                for service in ["", "SwiftKartService"] {
                    let status = try await health.check(.with { $0.service = service }).status
                    #expect(status == .serving, "'\(service)'")
                }
                await #expect { try await health.check(.with { $0.service = "Nope" }) } throws: {
                    ($0 as? RPCError)?.code == .notFound
                }
            }
        }
    }

    @Test("SIGTERM: live followers are told UNAVAILABLE, the server drains and exits 0")
    func gracefulShutdown() async throws {
        let directory = try TemporaryDirectory()
        let process = try await ServerProcess.start(Self.server, ["--port", "0", "--database", directory.path + "/db.sqlite"])
        let transport = try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: process.port))
        let stopped = Locked<(Int32, String)?>(nil)
        await #expect {
            try await withGRPCClient(transport: transport) { client in
                let (ended, end) = AsyncStream.makeStream(of: Never.self)
                try await SwiftKartService.Client(wrapping: client).followRace { writer in
                    try await writer.write(
                        .with {
                            $0.raceName = "Duck Pond Dash"
                            $0.eventTypes = [.kartLocations]
                        })
                    for await _ in ended {}
                } onResponse: { response in
                    defer { end.finish() }
                    for try await _ in response.messages where stopped.value == nil {
                        stopped.value = await process.stop()
                    }
                }
            }
        } throws: { ($0 as? RPCError)?.code == .unavailable }
        let (status, log) = try #require(stopped.value)
        #expect(status == 0)
        #expect(log.contains("SIGTERM: shutting down gracefully") && log.contains("stopped"), "\(log)")
    }

    @Test("Python grpcio, with stubs it generates from Protos/swiftkart.proto, lists races and follows one")
    func grpcioClient() async throws {
        try await withServer(speed: 40) { process, _ in
            let python = Self.root.appending(path: ".venv/bin/python").path
            let (status, output) = try await runProcess(
                python,
                [
                    Self.root.appending(path: "Tests/Peers/swiftkart_peer.py").path,
                    "--port", String(process.port),
                    "--protos", Peers.repositoryRoot.appending(path: "Protos").path,
                    "--health-proto", Peers.repositoryRoot.appending(path: "Sources/PitlaneHealth").path,
                ])
            #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
        }
    }

    @Test(
        "The Connect runtime for Python, httpx and curl call it over HTTP/1.1 and HTTP/2: Connect (proto, JSON, GET), gRPC-Web (binary, text), CORS"
    )
    func webClients() async throws {
        try await withServer(speed: 40, arguments: ["--cors-origins", "https://app.example"]) { process, _ in
            let python = Self.root.appending(path: ".venv/bin/python").path
            let (status, output) = try await runProcess(
                python,
                [
                    Self.root.appending(path: "Tests/Peers/web_peer.py").path,
                    "--port", String(process.port), "--service", "swiftkart",
                    "--protos", Peers.repositoryRoot.appending(path: "Protos").path,
                ])
            #expect(status == 0 && output.contains(" 0 failed"), "\(output)")
        }
    }
}
