import Testing

@testable import PitlaneHTTP2

@Suite("grpc-timeout", .timeLimit(.minutes(1)))
struct GRPCTimeoutTests {
    @Test("parses up to eight digits and a unit; anything else is malformed")
    func parsing() {
        #expect(GRPCTimeout.parse("10S") == .seconds(10))
        #expect(GRPCTimeout.parse("99999999H") == .seconds(99_999_999 * 3600))
        #expect(GRPCTimeout.parse("2M") == .seconds(120))
        #expect(GRPCTimeout.parse("250m") == .milliseconds(250))
        #expect(GRPCTimeout.parse("7u") == .microseconds(7))
        #expect(GRPCTimeout.parse("0n") == .nanoseconds(0))
        for malformed in ["", "S", "10", "123456789S", "1.5S", "-1S", "10s", "1 S", "١S", "10S\u{0}"] {
            #expect(GRPCTimeout.parse(malformed) == nil, "\(malformed)")
        }
    }

    @Test("formats the finest unit that fits in eight digits, rounded up")
    func formatting() {
        #expect(GRPCTimeout.format(.seconds(10)) == "10000000u")
        #expect(GRPCTimeout.format(.nanoseconds(1_500)) == "1500n")
        #expect(GRPCTimeout.format(.seconds(200_000_000)) == "3333334M")
        for duration: Duration in [.milliseconds(1), .seconds(30), .seconds(3600 * 24)] {
            #expect(GRPCTimeout.parse(GRPCTimeout.format(duration)).map { $0 >= duration } == true)
        }
    }
}
