// `pitlane-interop-client --server_host=H --server_port=N --test_case=NAME`: gRPC's interop
// test cases against any grpc.testing.TestService.
import Glibc
import PitlaneInterop

if CommandLine.arguments.dropFirst().contains(where: { $0 == "--help" || $0 == "-h" }) {
    print(InteropClientOptions.usage)
    exit(0)
}

do {
    let options = try InteropClientOptions(arguments: Array(CommandLine.arguments.dropFirst()))
    let outcomes = try await InteropClient.run(options.testCases, against: options.target, security: options.security) { outcome in
        print(outcome)
        fflush(nil)
    }
    let failed = outcomes.filter { $0.failure != nil }.count
    print("cases: \(outcomes.count - failed) ok, \(failed) failed")
    exit(failed == 0 ? 0 : 1)
} catch let error as UsageError {
    printError("pitlane-interop-client: \(error)\n\(InteropClientOptions.usage)")
    exit(2)
} catch {
    printError("pitlane-interop-client: \(error)")
    exit(1)
}
