import PitlaneCore
import PitlaneErrorDetails
import Testing

@Suite("Rich errors", .timeLimit(.minutes(1)))
struct RichErrorTests {
    @Test("details travel in grpc-status-details-bin and come back typed")
    func roundTrip() throws {
        let error = try RPCError(
            code: .outOfRange, message: "too old",
            details: [
                Google_Rpc_ErrorInfo.with {
                    $0.reason = "UPDATES_NOT_RETAINED"
                    $0.domain = "orders.pitlane.dev"
                    $0.metadata = ["epoch": "2a"]
                },
                Google_Rpc_RetryInfo.with { $0.retryDelay = .with { $0.seconds = 1 } },
            ])
        #expect(error.metadata[binaryValues: RPCError.statusDetailsKey].count == 1)
        #expect(error.richStatus?.code == 11 && error.richStatus?.message == "too old")
        #expect(error.detail(Google_Rpc_ErrorInfo.self)?.metadata["epoch"] == "2a")
        #expect(error.detail(Google_Rpc_RetryInfo.self)?.retryDelay.seconds == 1)
        #expect(error.detail(Google_Rpc_BadRequest.self) == nil)
        #expect(RPCError(code: .internal, message: "plain").richStatus == nil)
    }
}
