import CNGHTTP2
import Testing

@testable import PitlaneHTTP2

/// The server connection's policy on its own: no sockets, no sleeps, instants chosen here.
@Suite("Server connection state machine", .timeLimit(.minutes(1)))
struct ServerConnectionStateMachineTests {
    let start = ContinuousClock.now

    func machine(_ configure: (inout HTTP2ServerTransport.Config) -> Void = { _ in }) -> ServerConnectionStateMachine {
        var config = HTTP2ServerTransport.Config.defaults
        configure(&config)
        return ServerConnectionStateMachine(limits: .init(config), now: start)
    }

    static let calm = NGHTTP2_ENHANCE_YOUR_CALM.rawValue
    static let noError = NGHTTP2_NO_ERROR.rawValue

    @Test("pings: one per interval is fine; strikes past the limit get GOAWAY too_many_pings once, and the connection closes")
    func pingPolicy() {
        var connection = machine {
            $0.http2.minimumPingInterval = .seconds(300)
            $0.http2.maxPingStrikes = 2
        }
        #expect(connection.pingReceived(at: start) == .none)
        #expect(connection.pingReceived(at: start + .seconds(300)) == .none)  // on time: no strike
        #expect(connection.pingReceived(at: start + .seconds(301)) == .none)  // strike 1
        #expect(connection.pingReceived(at: start + .seconds(302)) == .none)  // strike 2
        #expect(
            connection.pingReceived(at: start + .seconds(303))
                == .sendGoAway(errorCode: Self.calm, debug: "too_many_pings"))
        #expect(connection.phase == .closingOnceWritten)
        #expect(connection.pingReceived(at: start + .seconds(304)) == .none)  // said once
    }

    @Test("pings: sending headers or data forgives strikes, as gRPC C-core does (BDP pings on a busy stream)")
    func pingsForgiven() {
        var connection = machine {
            $0.http2.minimumPingInterval = .seconds(300)
            $0.http2.maxPingStrikes = 2
        }
        for second in 0..<100 {
            #expect(connection.pingReceived(at: start + .seconds(second)) == .none)
            connection.framesSent()
        }
        #expect(connection.phase == .active)
    }

    @Test("rapid reset: a burst within the budget is fine, past it GOAWAY too_many_resets; the budget refills with time")
    func resetBudget() {
        var connection = machine {
            $0.http2.maxStreamResetBurst = 10
            $0.http2.streamResetsPerSecond = 2
        }
        for _ in 0..<10 { #expect(connection.resetReceived(at: start) == .none) }
        // Five seconds refill ten resets.
        for _ in 0..<10 { #expect(connection.resetReceived(at: start + .seconds(5)) == .none) }
        #expect(
            connection.resetReceived(at: start + .seconds(5))
                == .sendGoAway(errorCode: Self.calm, debug: "too_many_resets"))
        #expect(connection.phase == .closingOnceWritten)
    }

    @Test("idle: a connection without streams for the limit drains; an open stream holds it; its end restarts the count")
    func idle() {
        var connection = machine { $0.connection.maxIdle = .seconds(30) }
        // Checked early: check again when the rest of the limit has passed.
        #expect(connection.idleCheck(at: start + .seconds(10)) == (.none, .seconds(20)))
        #expect(connection.streamOpened() == .accept)
        #expect(connection.idleCheck(at: start + .seconds(40)) == (.none, nil))  // a stream is open
        connection.streamClosed(at: start + .seconds(50))
        #expect(connection.idleCheck(at: start + .seconds(79)) == (.none, .seconds(1)))
        #expect(connection.idleCheck(at: start + .seconds(80)) == (.sendDrainNotice, nil))
        #expect(connection.phase == .drainNoticeSent)
    }

    @Test("graceful drain in two steps: streams sent before the notice's PING came back are taken, later ones refused")
    func drain() {
        var connection = machine()
        #expect(connection.streamOpened() == .accept)
        #expect(connection.beginDrain() == .sendDrainNotice)
        #expect(connection.beginDrain() == .none)  // once
        #expect(connection.streamOpened() == .accept)  // sent before the client saw the notice
        #expect(connection.drainNoticeAcknowledged() == .sendGoAway(errorCode: Self.noError, debug: ""))
        #expect(connection.drainNoticeAcknowledged() == .none)
        #expect(connection.streamOpened() == .refuse)
        connection.streamClosed(at: start)
        #expect(connection.phase == .draining)
        connection.streamClosed(at: start)  // the last one: close once its frames are out
        #expect(connection.phase == .closingOnceWritten)
        #expect(connection.outputWritten(sessionWantsIO: true) == .linger)
    }

    @Test("a drain with no stream open closes once the final GOAWAY is out")
    func drainIdle() {
        var connection = machine()
        #expect(connection.beginDrain() == .sendDrainNotice)
        #expect(connection.drainNoticeAcknowledged() == .sendGoAway(errorCode: Self.noError, debug: ""))
        #expect(connection.phase == .closingOnceWritten)
    }

    @Test("closing: once the last word is written the connection lingers (no more frames), then closes once")
    func linger() {
        var connection = machine()
        #expect(connection.outputWritten(sessionWantsIO: true) == .none)  // an ordinary write
        #expect(connection.pingReceived(at: start) == .none)
        connection.protocolFailed()  // nghttp2 queued a GOAWAY PROTOCOL_ERROR
        #expect(connection.phase == .closingOnceWritten)
        #expect(connection.streamOpened() == .refuse)
        #expect(connection.outputWritten(sessionWantsIO: true) == .linger)
        #expect(!connection.isExchangingFrames)
        #expect(connection.resetReceived(at: start) == .none)
        #expect(connection.outputWritten(sessionWantsIO: false) == .none)
        #expect(connection.lingerEnded() == .close(lingered: true))
        #expect(connection.lingerEnded() == .none)
        #expect(connection.phase == .closed)
    }

    @Test("closing: a session nghttp2 ended by itself lingers once its output is written")
    func sessionEnded() {
        var connection = machine()
        #expect(connection.outputWritten(sessionWantsIO: false) == .linger)
        #expect(connection.phase == .lingering)
        #expect(connection.ageGraceEnded() == .none)
    }

    @Test("preface: a client without SETTINGS by the timeout is closed; one with SETTINGS is not")
    func preface() {
        var silent = machine()
        #expect(silent.prefaceTimeoutPassed() == .close(lingered: false))
        #expect(silent.phase == .closed)
        var talking = machine()
        talking.settingsReceived()
        #expect(talking.prefaceTimeoutPassed() == .none)
        #expect(talking.phase == .active)
    }

    @Test("age: the age limit drains, and the grace period closes whatever is still open")
    func age() {
        var connection = machine {
            $0.connection.maxAge = .seconds(60)
            $0.connection.maxAgeGrace = .seconds(5)
        }
        #expect(connection.streamOpened() == .accept)
        #expect(connection.ageReached() == .sendDrainNotice)
        #expect(connection.ageGraceEnded() == .close(lingered: false))
        #expect(connection.phase == .closed)
        #expect(connection.ageGraceEnded() == .none)
    }
}

@Suite("Client keepalive state machine", .timeLimit(.minutes(1)))
struct ClientKeepaliveStateMachineTests {
    @Test("pings only while RPCs are open (unless permitted without), one at a time; a missing ACK closes")
    func keepalive() {
        var keepalive = ClientKeepaliveStateMachine(permitWithoutCalls: false)
        #expect(keepalive.intervalElapsed(openStreams: 0) == .none)
        #expect(keepalive.intervalElapsed(openStreams: 1) == .ping)
        #expect(keepalive.intervalElapsed(openStreams: 1) == .none)  // one unanswered at a time
        let answered = keepalive.ackReceived()
        let lateTimeout = keepalive.ackTimedOut()
        #expect(answered && !lateTimeout)  // answered: the timeout does nothing
        #expect(keepalive.intervalElapsed(openStreams: 2) == .ping)
        let timedOut = keepalive.ackTimedOut()
        #expect(timedOut)  // unanswered: close
        #expect(keepalive.intervalElapsed(openStreams: 2) == .none)

        var idle = ClientKeepaliveStateMachine(permitWithoutCalls: true)
        #expect(idle.intervalElapsed(openStreams: 0) == .ping)
    }
}
