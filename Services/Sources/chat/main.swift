// chat: talk in a room of orders-server's chat. Lines typed are sent; everyone's messages and
// who comes and goes are printed. End with Ctrl-D (leaves the room) or Ctrl-C.
//   chat ROOM --nick NAME [--host 127.0.0.1] [--port 8090 | --unix PATH]
import Foundation
import Glibc
import LiveChat
import Pitlane
import PitlaneCommandLine

let usage = "usage: chat ROOM --nick NAME [--host 127.0.0.1] [--port 8090 | --unix PATH]"

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("chat: \(message)\n".utf8))
    exit(status)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let options: CommandLineOptions
do {
    options = try CommandLineOptions(
        Array(CommandLine.arguments.dropFirst()), usage: usage, valueOptions: CommandLineOptions.transportOptions.union(["nick"]),
        flagOptions: CommandLineOptions.transportFlags)
} catch {
    fail("\(error)\n\(usage)", status: 2)
}
guard options.positional.count == 1, let nickname = options["nick"] else { fail(usage, status: 2) }
let room = options.positional[0]

let target: HTTP2ClientTransport.Target
do {
    target = try options.clientTarget(defaultPort: 8090)
} catch {
    fail("\(error)\n\(usage)", status: 2)
}

/// Standard input's lines, read on a thread of their own (reading blocks).
@Sendable func inputLines() -> AsyncStream<String> {
    let (lines, sink) = AsyncStream.makeStream(of: String.self)
    Thread {
        while let line = readLine() { sink.yield(line) }
        sink.finish()
    }.start()
    return lines
}

@Sendable func clockTime(_ stamp: Google_Protobuf_Timestamp) -> String {
    var seconds = time_t(stamp.seconds)
    var parts = tm()
    localtime_r(&seconds, &parts)
    return String(format: "%02d:%02d", parts.tm_hour, parts.tm_min)
}

do {
    try await withGRPCClient(transport: try HTTP2ClientTransport(target: target, security: options.clientSecurity())) { client in
        try await Chat_V1_ChatRoom.Client(wrapping: client).chat { writer in
            try await writer.write(
                .with {
                    $0.join = .with {
                        $0.room = room
                        $0.nickname = nickname
                    }
                })
            for await line in inputLines() where !line.isEmpty {
                try await writer.write(.with { $0.send = .with { $0.text = line } })
            }
        } onResponse: { response in
            for try await event in response.messages {
                switch event.event {
                case .joined(let joined):
                    say("-- you joined \(joined.room); here: \(joined.participants.joined(separator: ", "))")
                case .message(let message):
                    say("[\(clockTime(message.sentAt))] \(message.nickname): \(message.text)")
                case .presence(let presence):
                    let who = presence.nickname.isEmpty ? "a WebSocket client" : presence.nickname
                    say("-- \(who) \(presence.change == .joined ? "joined" : "left") (\(presence.participants) here)")
                case nil:
                    break
                }
            }
        }
    }
} catch let error as RPCError {
    fail("\(error.code): \(error.message)")
} catch {
    fail("\(error)")
}
