import PitlaneCore
import PitlaneProtobuf
import Synchronization

/// A span's "message" events, as OpenTelemetry's RPC conventions name them: one per message
/// sent or received, with `message.type` (`SENT` or `RECEIVED`), `message.id` (counted from 1
/// in each direction) and `message.uncompressed_size` (the message's serialized size in the
/// binary format, when it is a generated message). Compressed sizes are the transport's and
/// are not known here, so `message.compressed_size` is left out.
///
/// A span keeps the first `limit` events; the others are counted in its
/// `dropped_events_count`, though their ids still count. Recording takes a lock and appends a
/// small record (the array grows by doubling, to `limit` at most); the OTLP events are built
/// once, when the span ends. Only tracing interceptors made with `messageEvents: true` make one.
final class MessageEvents: Sendable {
    /// Events a span keeps at most, by default.
    static let defaultLimit = 128

    private struct Record: Sendable {
        var time: UInt64
        var sent: Bool
        var id: Int
        var size: Int?
    }

    private struct State {
        var records: [Record] = []
        var sent = 0
        var received = 0
        var dropped = 0
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int = MessageEvents.defaultLimit) {
        self.limit = limit
    }

    /// A message is being sent.
    func sent(_ message: some Sendable) {
        record(sent: true, size: Self.size(of: message))
    }

    /// A message was received (and read).
    func received(_ message: some Sendable) {
        record(sent: false, size: Self.size(of: message))
    }

    private func record(sent: Bool, size: Int?) {
        state.withLock { state in
            let id: Int
            if sent {
                state.sent += 1
                id = state.sent
            } else {
                state.received += 1
                id = state.received
            }
            guard state.records.count < limit else {
                state.dropped += 1
                return
            }
            // The time is read under the lock, so the events of both directions stay in time order.
            state.records.append(Record(time: OTLPSpanExporter.now(), sent: sent, id: id, size: size))
        }
    }

    /// Puts the events, and the count of those dropped, in `span`.
    func write(into span: inout OTLPSpan) {
        let (records, dropped) = state.withLock { state in (state.records, state.dropped) }
        span.events = records.map { record -> OTLPSpan.Event in
            OTLPSpan.Event.with { event in
                event.timeUnixNano = record.time
                event.name = "message"
                event.attributes = [
                    OTLPSpanExporter.attribute("message.type", record.sent ? "SENT" : "RECEIVED"),
                    OTLPSpanExporter.attribute("message.id", record.id),
                ]
                if let size = record.size { event.attributes.append(OTLPSpanExporter.attribute("message.uncompressed_size", size)) }
            }
        }
        span.droppedEventsCount = UInt32(clamping: dropped)
    }

    /// A generated message's serialized size (computed, not serialized); the count of a
    /// message that is bytes already (a call no handler serves); nil for anything else.
    static func size(of message: some Sendable) -> Int? {
        if let message = message as? any PitlaneProtobuf.Message { return message.encodedSize() }
        if let bytes = message as? [UInt8] { return bytes.count }
        return nil
    }
}

/// A sequence passed through, each element told to `record` as it is read: a request's
/// messages as a server handler reads them.
struct RecordingSequence<Element: Sendable>: AsyncSequence, Sendable {
    let base: RPCAsyncSequence<Element, any Error>
    let record: @Sendable (Element) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RPCAsyncSequence<Element, any Error>.AsyncIterator
        let record: @Sendable (Element) -> Void

        mutating func next() async throws -> Element? {
            guard let element = try await base.next() else { return nil }
            record(element)
            return element
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), record: record)
    }
}

/// A writer passed through, each element told to `record` as it is written (before it goes:
/// the call may end as soon as the peer has it).
struct RecordingWriter<Element: Sendable>: RPCWriterProtocol {
    let base: RPCWriter<Element>
    let record: @Sendable (Element) -> Void

    func write(_ element: Element) async throws {
        record(element)
        try await base.write(element)
    }

    func write(serialized message: SerializedMessage<Element>) async throws {
        record(message.message)
        try await base.write(serialized: message)
    }

    func tryWrite(_ element: Element) -> Bool {
        guard base.tryWrite(element) else { return false }
        record(element)
        return true
    }

    func tryWrite(serialized message: SerializedMessage<Element>) -> Bool {
        guard base.tryWrite(serialized: message) else { return false }
        record(message.message)
        return true
    }
}
