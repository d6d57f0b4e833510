import CLibPQ
import Glibc
import PitlaneSQL
import Synchronization

/// `LISTEN`s to one channel on a connection of its own, on a thread of its own, and calls the
/// handler with each notification in the order the transactions committed.
///
/// When the connection drops (the server restarted, a network failure), the handler hears
/// `.lost`, and the listener reopens it with backoff (50 ms doubling to 1 s); once listening
/// again the handler hears `.listening` and reads back from the tables what it may have
/// missed. Notifications are only wake-ups: the tables stay the truth.
public final class PostgresListener: SQLListening {
    let settings: PostgresSettings
    let channel: String
    private let handler: @Sendable (SQLNotification) -> Void
    private let stopping = Atomic(false)
    /// The listening thread, until `stop` joins it.
    private let thread = Mutex<pthread_t?>(nil)
    /// How long the loop waits for input before it looks at `stopping` again.
    static let pollMilliseconds: Int32 = 100

    init(settings: PostgresSettings, channel: String, handler: @escaping @Sendable (SQLNotification) -> Void) {
        self.settings = settings
        self.channel = channel
        self.handler = handler
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        pthread_create(
            &thread, nil,
            { argument in
                let listener = Unmanaged<PostgresListener>.fromOpaque(argument!).takeRetainedValue()
                listener.run()
                return nil
            }, context)
        self.thread.withLock { $0 = thread }
    }

    /// Stops the thread and waits for it: the handler is not called after this returns.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        if let thread = thread.withLock({ $0.take() }) { pthread_join(thread, nil) }
    }

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    private func run() {
        var delay: Int32 = 50
        var reported = false
        while !isStopping {
            do {
                let connection = try PostgresConnection(settings)
                try connection.execute("LISTEN \"\(channel.replacing("\"", with: "\"\""))\"")
                delay = 50
                handler(.listening)
                reported = false
                let reason = receive(on: connection)
                guard !isStopping else { return }
                handler(.lost(reason))
                reported = true
            } catch {
                if !reported { handler(.lost("\(error)")) }
                reported = true
            }
            sleepUnlessStopping(milliseconds: delay)
            delay = min(delay * 2, 1_000)
        }
    }

    /// Hands notifications over until the connection fails (its reason) or the listener stops.
    private func receive(on connection: PostgresConnection) -> String {
        var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
        while !isStopping {
            descriptor.revents = 0
            let ready = poll(&descriptor, 1, Self.pollMilliseconds)
            if ready < 0, errno != EINTR { return "poll failed (errno \(errno))" }
            guard ready > 0 else { continue }
            guard PQconsumeInput(connection.handle) == 1 else {
                return PostgresConnection.trimmed(PQerrorMessage(connection.handle))
            }
            var payloads: [String] = []
            while let notification = PQnotifies(connection.handle) {
                payloads.append(String(cString: notification.pointee.extra))
                PQfreemem(notification)
            }
            if !payloads.isEmpty { handler(.payloads(payloads)) }
            if PQstatus(connection.handle) != CONNECTION_OK { return "the connection closed" }
        }
        return "stopped"
    }

    private func sleepUnlessStopping(milliseconds: Int32) {
        var left = milliseconds
        while left > 0, !isStopping {
            let step = min(left, Self.pollMilliseconds)
            usleep(UInt32(step) * 1_000)
            left -= step
        }
    }
}
