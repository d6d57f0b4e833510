import PitlaneCore
import PitlaneHTTP2

/// Runs interop test cases one after another on one connection, as `pitlane-interop-client`
/// does.
public enum InteropClient {
    /// One case's outcome.
    public struct Outcome: Sendable, CustomStringConvertible {
        public let testCase: InteropTestCase
        /// Why it failed; nil when it passed.
        public let failure: String?

        public var description: String {
            failure.map { "FAIL \(testCase.name): \($0)" } ?? "ok \(testCase.name)"
        }
    }

    /// Runs each case against `target`, reporting each outcome as it comes; returns them all.
    public static func run(
        _ testCases: [InteropTestCase], against target: HTTP2ClientTransport.Target,
        security: HTTP2ClientTransport.Security = .plaintext, report: @Sendable (Outcome) -> Void = { _ in }
    ) async throws -> [Outcome] {
        try await withGRPCClient(transport: try HTTP2ClientTransport(target: target, security: security)) { client in
            var outcomes: [Outcome] = []
            for testCase in testCases {
                let outcome: Outcome
                do {
                    try await testCase.run(using: client)
                    outcome = Outcome(testCase: testCase, failure: nil)
                } catch {
                    outcome = Outcome(testCase: testCase, failure: "\(error)")
                }
                report(outcome)
                outcomes.append(outcome)
            }
            return outcomes
        }
    }
}
