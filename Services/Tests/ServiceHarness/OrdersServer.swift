import Foundation
import LiveChat
import Orders
import PitlaneCore
import PitlaneHTTP2
import PitlanePostgres
import PitlaneSQL
import PitlaneSQLite
import TestSupport

package typealias OrdersClient = Orders_V1_OrderTracking.Client<HTTP2ClientTransport>
package typealias ChatClient = Chat_V1_ChatRoom.Client<HTTP2ClientTransport>

/// The built `orders-server` on a fresh database (an SQLite file in a temporary directory, or a
/// database of its own on the test PostgreSQL server), restartable on the same port (after a
/// SIGTERM or a `kill -9`) and database.
package final class OrdersServer: Sendable {
    package static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    package static let executable = root.appending(path: ".build/debug/orders-server").path
    package static let ordersCLI = root.appending(path: ".build/debug/orders").path

    package let directory: TemporaryDirectory
    package let arguments: [String]
    private let current: Locked<ServerProcess?>
    package let port: Int
    package let backend: TestBackend
    /// What `--database` is: the SQLite file or the PostgreSQL URL.
    package let database: String

    /// Starts a server on `backend`; `arguments` are added to the port and database.
    package init(_ arguments: [String] = [], backend: TestBackend = .sqlite) async throws {
        directory = try TemporaryDirectory()
        self.arguments = arguments
        self.backend = backend
        database = try await backend.databaseArgument(in: directory)
        let process = try await ServerProcess.start(Self.executable, ["--port", "0", "--database", database] + arguments)
        port = process.port
        current = Locked(process)
    }

    /// Stops the server with `signal` (SIGKILL: `kill -9`); returns its exit status and log.
    @discardableResult
    package func stop(signal: Int32 = SIGTERM) async -> (status: Int32, log: String) {
        guard
            let process = current.withLock({ current in
                defer { current = nil }
                return current
            })
        else { return (0, "") }
        return await process.stop(signal: signal)
    }

    /// Starts the server again on the same port and database.
    package func restart(_ extraArguments: [String] = []) async throws {
        let process = try await ServerProcess.start(
            Self.executable, ["--port", String(port), "--database", database] + arguments + extraArguments)
        current.withLock { $0 = process }
    }

    /// The server's database, opened by the test itself (while the server is stopped, say).
    package func openDatabase() throws -> any SQLDatabase {
        switch backend {
        case .sqlite: try SQLiteStore(path: database)
        case .postgres: try PostgresDatabase(settings: PostgresSettings(url: database))
        }
    }

    /// Runs `body` with a new server, stopping it afterwards (also when `body` throws); expects
    /// a clean exit after SIGTERM.
    package static func with<T: Sendable>(
        _ arguments: [String] = [], backend: TestBackend = .sqlite,
        _ body: (OrdersServer) async throws -> T
    ) async throws -> T {
        let server = try await OrdersServer(arguments, backend: backend)
        do {
            let result = try await body(server)
            let (status, log) = await server.stop()
            if status != 0 { throw UncleanExit(description: "orders-server exited with \(status): \(log)") }
            return result
        } catch {
            await server.stop(signal: SIGKILL)
            throw error
        }
    }

    package func transport() throws -> HTTP2ClientTransport {
        var config = HTTP2ClientTransport.Config.defaults
        config.backoff.initial = .milliseconds(20)
        config.backoff.maximum = .milliseconds(200)
        return try HTTP2ClientTransport(target: .ipv4(host: "127.0.0.1", port: port), config: config)
    }

    /// Runs `body` with a client that authenticates with `token` (none when nil).
    package func withClient<T: Sendable>(token: String?, _ body: (GRPCClient<HTTP2ClientTransport>) async throws -> T) async throws -> T {
        let interceptors: [any ClientInterceptor] = token.map { [BearerTokenClientInterceptor(token: $0)] } ?? []
        return try await withGRPCClient(transport: try transport(), interceptors: interceptors, handleClient: body)
    }

    package func withOrders<T: Sendable>(token: String?, _ body: (OrdersClient) async throws -> T) async throws -> T {
        try await withClient(token: token) { try await body(OrdersClient(wrapping: $0)) }
    }
}

extension OrdersClient {
    /// Publishes a timeline event titled `title`.
    package func publish(_ title: String, to orderID: String, options: CallOptions = .defaults) async throws -> OrderUpdate {
        try await publishUpdate(
            .with {
                $0.orderID = orderID
                $0.timelineEvent = .with {
                    $0.id = title
                    $0.title = title
                }
            }, options: options)
    }

    /// Watches `orderID` from `since` until `count` updates came (or the stream ended).
    package func collect(_ orderID: String, since: String, count: Int) async throws -> [OrderUpdate] {
        try await watchOrder(
            .with {
                $0.orderID = orderID
                $0.sinceUpdateID = since
            }
        ) { response in
            var updates: [OrderUpdate] = []
            guard count > 0 else { return updates }
            for try await update in response.messages {
                updates.append(update)
                if updates.count == count { break }
            }
            return updates
        }
    }
}

extension OrderUpdate {
    /// The title of a timeline event (what the tests publish).
    package var title: String {
        if case .timelineEvent(let event) = event { return event.title }
        return ""
    }
}

/// The error `body` fails with, as an `RPCError`.
package func rpcError(_ body: () async throws -> Void) async -> RPCError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? RPCError
    }
}

/// Where two sequences first differ, described briefly; nil when they are equal (failure
/// messages stay short for sequences of thousands).
package func firstDifference<T: Equatable>(_ actual: [T], _ expected: [T]) -> String? {
    guard actual != expected else { return nil }
    let index = zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(actual.count, expected.count)
    let got = index < actual.count ? "\(actual[index])" : "the end"
    let wanted = index < expected.count ? "\(expected[index])" : "the end"
    return "\(actual.count) vs \(expected.count) elements; at \(index): \(got), expected \(wanted)"
}

package struct UncleanExit: Error, CustomStringConvertible {
    package let description: String
}
