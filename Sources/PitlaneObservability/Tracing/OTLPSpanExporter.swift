import Glibc
import PitlaneCore
import PitlaneHTTP2
import PitlaneProtobuf
import Synchronization

/// A span as OTLP sends it: the generated `opentelemetry.proto.trace.v1.Span` message.
public typealias OTLPSpan = Opentelemetry_Proto_Trace_V1_Span

/// Sends finished spans to an OpenTelemetry collector over OTLP/gRPC
/// (`opentelemetry.proto.collector.trace.v1.TraceService/Export`) with Pitlane's own client,
/// in batches. Recording never waits: spans wait in a bounded queue, and those that find it
/// full (or whose batch the collector refused) are counted in ``droppedSpans``.
///
/// Spans are sent while ``exporting(to:interval:isolation:body:)`` runs (or within
/// ``withOTLPExporter(endpoint:serviceName:queueLimit:batchSize:interval:isolation:body:)``); recording
/// before or after only queues them, up to the limit.
public final class OTLPSpanExporter: Sendable {
    private struct Queue {
        var spans: [OTLPSpan] = []
        var waiter: CheckedContinuation<Void, Never>?
        /// The current wait is over (its timer fired): a waiter that comes late must not wait.
        var waitOver = false
        /// The exporting ends: send what is queued, then stop.
        var stopping = false
    }

    /// The `service.name` resource attribute sent with every batch.
    public let serviceName: String
    private let queueLimit: Int
    private let batchSize: Int
    private let queue = Mutex(Queue())
    private let dropped = Atomic<Int>(0)
    private let exported = Atomic<Int>(0)

    /// - Parameters:
    ///   - serviceName: the `service.name` resource attribute.
    ///   - queueLimit: spans waiting at most; more are dropped. Default 4,096.
    ///   - batchSize: spans per export, at most. Default 256.
    public init(serviceName: String, queueLimit: Int = 4_096, batchSize: Int = 256) {
        self.serviceName = serviceName
        self.queueLimit = queueLimit
        self.batchSize = batchSize
    }

    /// Spans dropped: the queue was full, or the collector could not be reached.
    public var droppedSpans: Int { dropped.load(ordering: .relaxed) }
    /// Spans the collector took.
    public var exportedSpans: Int { exported.load(ordering: .relaxed) }

    /// Queues a finished span; drops it when the queue is full.
    public func record(_ span: OTLPSpan) {
        let (accepted, waiter) = queue.withLock { queue -> (Bool, CheckedContinuation<Void, Never>?) in
            guard queue.spans.count < queueLimit else { return (false, nil) }
            queue.spans.append(span)
            guard queue.spans.count >= batchSize, let waiter = queue.waiter else { return (true, nil) }
            queue.waiter = nil
            return (true, waiter)
        }
        if !accepted { dropped.add(1, ordering: .relaxed) }
        waiter?.resume()
    }

    /// The current time for spans, in nanoseconds since 1970.
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    // MARK: Exporting

    /// The spans queued, taken off the queue (internal: tests read what was recorded).
    func take() -> [OTLPSpan] {
        queue.withLock { queue in
            defer { queue.spans.removeAll(keepingCapacity: true) }
            return queue.spans
        }
    }

    /// Waits until a batch is full or `interval` passes.
    private func waitForBatch(_ interval: Duration) async {
        queue.withLock { $0.waitOver = false }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let ready = self.queue.withLock { queue -> Bool in
                        if queue.spans.count >= self.batchSize || queue.waitOver || queue.stopping { return true }
                        queue.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: interval) }
            await group.next()
            group.cancelAll()
            // Whichever came first, the other side must not wait on.
            self.queue.withLock { queue in
                queue.waitOver = true
                defer { queue.waiter = nil }
                return queue.waiter
            }?.resume()
        }
    }

    func export(_ spans: [OTLPSpan], with client: Opentelemetry_Proto_Collector_Trace_V1_TraceService.Client<HTTP2ClientTransport>) async {
        guard !spans.isEmpty else { return }
        let request = Opentelemetry_Proto_Collector_Trace_V1_ExportTraceServiceRequest.with {
            $0.resourceSpans = [
                .with {
                    $0.resource = .with { $0.attributes = [Self.attribute("service.name", serviceName)] }
                    $0.scopeSpans = [
                        .with {
                            $0.scope = .with {
                                $0.name = "pitlane"
                                $0.version = "1"
                            }
                            $0.spans = spans
                        }
                    ]
                }
            ]
        }
        do {
            let response = try await client.export(
                request,
                options: .defaults.with {
                    $0.timeout = .seconds(5)
                    $0.waitForReady = true
                })
            let rejected = Int(response.partialSuccess.rejectedSpans)
            exported.add(spans.count - rejected, ordering: .relaxed)
            dropped.add(rejected, ordering: .relaxed)
        } catch {
            dropped.add(spans.count, ordering: .relaxed)
        }
    }

    /// Exports until ``stop()``, then once more: nothing recorded before the stop is left.
    func run(client: Opentelemetry_Proto_Collector_Trace_V1_TraceService.Client<HTTP2ClientTransport>, interval: Duration) async {
        while true {
            await waitForBatch(interval)
            let stopping = queue.withLock { $0.stopping }
            await export(take(), with: client)
            if stopping { return }
        }
    }

    /// Ends ``run(client:interval:)`` after one last export.
    func stop() {
        queue.withLock { queue in
            queue.stopping = true
            defer { queue.waiter = nil }
            return queue.waiter
        }?.resume()
    }

    static func attribute(_ key: String, _ value: String) -> Opentelemetry_Proto_Common_V1_KeyValue {
        .with {
            $0.key = key
            $0.value = .with { $0.stringValue = value }
        }
    }

    static func attribute(_ key: String, _ value: Int) -> Opentelemetry_Proto_Common_V1_KeyValue {
        .with {
            $0.key = key
            $0.value = .with { $0.intValue = Int64(value) }
        }
    }
}

extension OTLPSpanExporter {
    /// Sends spans to the collector at `endpoint` (`host:port`, plaintext OTLP/gRPC) while
    /// `body` runs, every `interval` or whenever a batch is full; what is still queued when
    /// `body` returns is sent before this returns. `body` runs on the caller's actor.
    public func exporting<T: Sendable>(
        to endpoint: String, interval: Duration = .seconds(1),
        isolation: isolated (any Actor)? = #isolation,
        body: () async throws -> T
    ) async throws -> T {
        let parts = endpoint.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else {
            throw RPCError(code: .invalidArgument, message: "an OTLP endpoint is host:port, not \(endpoint)")
        }
        let transport = try HTTP2ClientTransport(target: .dns(host: String(parts[0]), port: port))
        return try await withGRPCClient(transport: transport, isolation: isolation) { client in
            let collector = Opentelemetry_Proto_Collector_Trace_V1_TraceService.Client(wrapping: client)
            return try await withThrowingTaskGroup(of: Void.self, isolation: isolation) { group in
                group.addTask { await self.run(client: collector, interval: interval) }
                // On a throw too, the exporter sends what it has and ends.
                defer { stop() }
                let result = try await body()
                stop()
                try await group.waitForAll()
                return result
            }
        }
    }
}

/// Runs `body`, on the caller's actor, with an exporter to the collector at `endpoint`; see
/// ``OTLPSpanExporter/exporting(to:interval:isolation:body:)``.
public func withOTLPExporter<T: Sendable>(
    endpoint: String, serviceName: String, queueLimit: Int = 4_096, batchSize: Int = 256, interval: Duration = .seconds(1),
    isolation: isolated (any Actor)? = #isolation,
    body: (OTLPSpanExporter) async throws -> T
) async throws -> T {
    let exporter = OTLPSpanExporter(serviceName: serviceName, queueLimit: queueLimit, batchSize: batchSize)
    return try await exporter.exporting(to: endpoint, interval: interval, isolation: isolation) { try await body(exporter) }
}
