import PitlaneProtobuf
import SwiftKart
import Testing

/// What every standings update must satisfy, and what must hold from one update to the next.
struct StandingsCheck {
    let karts: Int
    let laps: Int32
    private var lastLap: [Int32: Int32] = [:]
    private(set) var updates = 0

    init(karts: Int, laps: Int32) {
        self.karts = karts
        self.laps = laps
    }

    mutating func check(_ standings: Standings, sourceLocation: SourceLocation = #_sourceLocation) {
        updates += 1
        let entries = standings.entries
        #expect(entries.map(\.position) == Array(1...Int32(karts)), "positions are 1...n in order", sourceLocation: sourceLocation)
        #expect(Set(entries.map(\.kartNumber)) == Set(1...Int32(karts)), "every kart once", sourceLocation: sourceLocation)
        #expect(entries.first?.gapToLeader.timeInterval == 0, "the leader's gap is zero", sourceLocation: sourceLocation)
        let gaps = entries.map(\.gapToLeader.timeInterval)
        #expect(
            zip(gaps, gaps.dropFirst()).allSatisfy { $0 <= $1 }, "gaps never shrink down the order: \(gaps)",
            sourceLocation: sourceLocation)
        for entry in entries {
            #expect((1...laps).contains(entry.lap), "lap \(entry.lap) of \(laps)", sourceLocation: sourceLocation)
            #expect(
                entry.lap >= lastLap[entry.kartNumber, default: 1], "kart \(entry.kartNumber)'s lap went backwards",
                sourceLocation: sourceLocation)
            lastLap[entry.kartNumber] = entry.lap
        }
    }

    /// Every kart has done every lap.
    var everyKartFinished: Bool { lastLap.count == karts && lastLap.values.allSatisfy { $0 == laps } }
}
