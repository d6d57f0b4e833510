// `pitlane-interop-server --port=PORT`: grpc.testing.TestService for gRPC's interop tests.
import Glibc
import PitlaneInterop

// SIGTERM ends the server (the default action). Started from a thread that blocks it (a test
// runner's), the process inherits the mask and would ignore it until killed: unblock it first.
var terminationSignals = sigset_t()
sigemptyset(&terminationSignals)
sigaddset(&terminationSignals, SIGTERM)
sigaddset(&terminationSignals, SIGINT)
pthread_sigmask(SIG_UNBLOCK, &terminationSignals, nil)

do {
    let options = try InteropServerOptions(arguments: Array(CommandLine.arguments.dropFirst()))
    try await InteropServer.run(options) { address in
        print("listening \(address.port.map(String.init) ?? "unix:\(address.path ?? "")")")
        fflush(nil)  // whoever started the server reads this line through a pipe
    }
} catch let error as UsageError {
    printError("pitlane-interop-server: \(error)\n\(InteropServerOptions.usage)")
    exit(2)
} catch {
    printError("pitlane-interop-server: \(error)")
    exit(1)
}
