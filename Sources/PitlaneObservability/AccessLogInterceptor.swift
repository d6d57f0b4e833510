import Glibc
import PitlaneCore

/// One structured line per RPC a server handles, for log pipelines: the time, a level (info
/// for OK, warn for the client's errors, error for the server's), the method, the status, the
/// duration, the peer and, when the client sent W3C Trace Context, the trace id.
///
/// ```
/// {"ts":"2026-12-02T07:20:01.123Z","level":"warn","event":"rpc","method":"SwiftKartService/FollowRace","status":"NOT_FOUND","duration_ms":0.4,"peer":"ipv4:127.0.0.1:51234"}
/// ts=2026-12-02T07:20:01.123Z level=info event=rpc method=SwiftKartService/ListRaces status=OK duration_ms=1.2 peer=ipv4:127.0.0.1:51234 trace_id=4bf92f3577b34da6a3ce929d0e0e4736
/// ```
public struct AccessLogInterceptor: ServerInterceptor {
    /// How lines are written.
    public enum Format: String, Sendable {
        case json
        case logfmt
    }

    private let format: Format
    private let write: @Sendable (String) -> Void

    /// - Parameter write: receives each line; defaults to standard error.
    public init(format: Format, write: @escaping @Sendable (String) -> Void = { line in
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }) {
        self.format = format
        self.write = write
    }

    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        let start = ContinuousClock.now
        let traceID = request.metadata[stringValues: "traceparent"].first.flatMap(Self.traceID(of:))
        return try await observing(request, context, next: next) { status in
            self.write(self.line(method: context.descriptor.fullyQualifiedMethod, code: status.code,
                                 duration: ContinuousClock.now - start, peer: context.peer, traceID: traceID))
        }
    }

    /// The trace id of a `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`); nil when malformed.
    static func traceID(of traceparent: String) -> String? {
        let parts = traceparent.split(separator: "-")
        guard parts.count >= 4, parts[1].count == 32, parts[1].allSatisfy(\.isHexDigit), parts[1] != String(repeating: "0", count: 32)
        else { return nil }
        return String(parts[1]).lowercased()
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
            return "{" + fields.map { "\"\($0.0)\":" + ($0.quoted ? "\"\(Self.jsonEscaped($0.1))\"" : $0.1) }.joined(separator: ",") + "}"
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

    private static func timestamp() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var parts = tm()
        var seconds = time.tv_sec
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let milliseconds = Int(time.tv_nsec / 1_000_000)
        let fraction = String(repeating: "0", count: 3 - String(milliseconds).count) + String(milliseconds)
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }

    private static func jsonEscaped(_ value: String) -> String {
        var escaped = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case _ where scalar.value < 0x20: escaped += "\\u00" + (scalar.value < 16 ? "0" : "") + String(scalar.value, radix: 16)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func logfmtValue(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty ? "\"\(jsonEscaped(value))\"" : value
    }
}
