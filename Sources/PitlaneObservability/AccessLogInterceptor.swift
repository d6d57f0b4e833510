import Glibc
import PitlaneCore
import PitlaneProtobuf

/// One structured line per RPC a server handles, for log pipelines: the time, a level (info
/// for OK, warn for the client's errors, error for the server's), the method, the status, the
/// duration, the peer and, when the client sent W3C Trace Context, the trace id. Calls to
/// methods the server does not serve are logged too, with the method the client named.
///
/// ```
/// {"ts":"2026-12-02T07:20:01.123Z","level":"warn","event":"rpc","method":"SwiftKartService/FollowRace","status":"NOT_FOUND","duration_ms":0.4,"peer":"ipv4:127.0.0.1:51234"}
/// ts=2026-12-02T07:20:01.123Z level=info event=rpc method=SwiftKartService/ListRaces status=OK duration_ms=1.2 peer=ipv4:127.0.0.1:51234 trace_id=4bf92f3577b34da6a3ce929d0e0e4736
/// ```
public struct AccessLogInterceptor: ServerInterceptor {
    /// How lines are written.
    public enum Format: String, Sendable {
        /// One JSON object per line.
        case json
        /// `key=value` pairs separated by spaces, values quoted where needed.
        case logfmt
    }

    private let format: Format
    private let write: @Sendable (String) -> Void

    /// Creates an access log that writes a line per RPC in `format`.
    ///
    /// - Parameter format: JSON or logfmt.
    /// - Parameter write: receives each line; defaults to standard error.
    public init(
        format: Format,
        write: @escaping @Sendable (String) -> Void = { line in
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        }
    ) {
        self.format = format
        self.write = write
    }

    /// True: calls to methods the server does not serve get their line too (UNIMPLEMENTED, the
    /// method as the client named it).
    public var seesUnservedCalls: Bool { true }

    /// Runs the call and writes its line once the handler has finished, with the status it ended with.
    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        let start = ContinuousClock.now
        let traceID = request.metadata[stringValues: "traceparent"].first.flatMap(Self.traceID(of:))
        return try await observing(request, context, next: next) { status in
            self.write(
                self.line(
                    method: context.descriptor.fullyQualifiedMethod, code: status.code,
                    duration: ContinuousClock.now - start, peer: context.peer, traceID: traceID))
        }
    }

    /// The trace id of a well-formed `traceparent` value, as the tracing interceptor reads it.
    static func traceID(of traceparent: String) -> String? {
        TraceContext(traceparent: traceparent)?.traceIDHex
    }

    func line(method: String, code: Status.Code, duration: Duration, peer: String, traceID: String?) -> String {
        var fields: [(String, String, quoted: Bool)] = [
            ("ts", Self.timestamp(), true), ("level", Self.level(code), true), ("event", "rpc", true),
            ("method", method, true), ("status", code.description, true),
            ("duration_ms", String((duration / .milliseconds(1) * 1000).rounded() / 1000), false), ("peer", peer, true),
        ]
        if let traceID { fields.append(("trace_id", traceID, true)) }
        switch format {
        case .json:
            var writer = JSONWriter()
            writer.beginObject()
            for field in fields {
                writer.key(field.0)
                if field.quoted { writer.writeString(field.1) } else { writer.writeRaw(field.1) }
            }
            writer.endObject()
            return String(decoding: writer.utf8Bytes, as: UTF8.self)
        case .logfmt:
            return fields.map { "\($0.0)=" + Self.logfmtValue($0.1) }.joined(separator: " ")
        }
    }

    /// The server's failures are errors; the client's (a bad argument, a missing order) warnings.
    static func level(_ code: Status.Code) -> String {
        switch code {
        case .ok: "info"
        case .unknown, .internal, .dataLoss, .unavailable, .deadlineExceeded: "error"
        default: "warn"
        }
    }

    /// Now, in RFC 3339 with milliseconds, as the JSON mapping writes a `Timestamp`.
    private static func timestamp() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let now = Google_Protobuf_Timestamp(seconds: Int64(time.tv_sec), nanos: Int32(time.tv_nsec / 1_000_000 * 1_000_000))
        let quoted = (try? now.jsonString()) ?? "\"\""
        return String(quoted.dropFirst().dropLast())
    }

    /// A logfmt value: bare, or quoted and escaped as a JSON string when it holds a space, a
    /// quote or an equals sign.
    private static func logfmtValue(_ value: String) -> String {
        guard value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty else { return value }
        var writer = JSONWriter()
        writer.writeString(value)
        return String(decoding: writer.utf8Bytes, as: UTF8.self)
    }
}
