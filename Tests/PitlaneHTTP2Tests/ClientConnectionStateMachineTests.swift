import Testing

@testable import PitlaneHTTP2

/// The client connection's lifecycle without sockets: each event's action, and what the
/// timers and writers see in each phase.
@Suite("Client connection lifecycle", .timeLimit(.minutes(1)))
struct ClientConnectionStateMachineTests {
    @Test("plaintext: connected means ready, the preface goes out with readiness")
    func plaintext() {
        var machine = ClientConnectionStateMachine()
        #expect(machine.isConnecting && !machine.writes && !machine.takesStreams)
        #expect(machine.socketConnected(secure: false) == .becomeReady(startSession: true))
        #expect(machine.takesStreams && machine.writes && machine.pings)
        #expect(machine.socketConnected(secure: false) == .none)
    }

    @Test("TLS: the handshake, the preface once it completes, readiness with the server's SETTINGS")
    func secure() {
        var machine = ClientConnectionStateMachine()
        #expect(machine.socketConnected(secure: true) == .beginHandshake)
        #expect(machine.isHandshaking && machine.writes && !machine.takesStreams && !machine.pings)
        #expect(machine.handshakeCompleted() == .startSession)
        #expect(!machine.takesStreams)
        #expect(machine.settingsReceived() == .becomeReady(startSession: false))
        #expect(machine.takesStreams)
        #expect(machine.settingsReceived() == .none, "later SETTINGS change nothing")
    }

    @Test("GOAWAY from the server: no new streams; finished once the last stream ends and all is written")
    func goAwayReceived() {
        var machine = ClientConnectionStateMachine()
        _ = machine.socketConnected(secure: false)
        #expect(machine.goAwayReceived() == .stopTakingStreams)
        #expect(!machine.takesStreams && machine.pings)
        #expect(!machine.isFinished(sessionActive: true, openStreams: 1, unsentBytes: false))
        #expect(!machine.isFinished(sessionActive: true, openStreams: 0, unsentBytes: true))
        #expect(machine.isFinished(sessionActive: true, openStreams: 0, unsentBytes: false))
        #expect(machine.drainRequested() == .none, "already draining: no second GOAWAY")
    }

    @Test("GOAWAY during the handshake: the connection never becomes ready")
    func goAwayBeforeReady() {
        var machine = ClientConnectionStateMachine()
        _ = machine.socketConnected(secure: true)
        #expect(machine.goAwayReceived() == .stopTakingStreams)
        #expect(machine.settingsReceived() == .none)
        #expect(!machine.takesStreams)
    }

    @Test("a drain sends GOAWAY once; close happens once; a closed connection writes nothing")
    func drainAndClose() {
        var machine = ClientConnectionStateMachine()
        _ = machine.socketConnected(secure: false)
        #expect(machine.drainRequested() == .sendGoAway)
        #expect(machine.drainRequested() == .none)
        let first = machine.close()
        let second = machine.close()
        #expect(first && !second)
        #expect(!machine.writes && !machine.takesStreams && !machine.pings)
        #expect(machine.goAwayReceived() == .none)
    }

    @Test("a session that ended is finished in any phase")
    func sessionEnded() {
        var machine = ClientConnectionStateMachine()
        _ = machine.socketConnected(secure: false)
        #expect(machine.isFinished(sessionActive: false, openStreams: 3, unsentBytes: true))
    }
}
