// `pitlane-interop-server --port=PORT`: grpc.testing.TestService for gRPC's interop tests.
import Glibc
import PitlaneHTTP2
import PitlaneInterop

// SIGTERM ends the server (the default action), even when started from a thread that blocks it.
System.unblockTerminationSignals()

if CommandLine.arguments.dropFirst().contains(where: { $0 == "--help" || $0 == "-h" }) {
    print(InteropServerOptions.usage)
    exit(0)
}

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
