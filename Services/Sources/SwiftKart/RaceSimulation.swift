import PitlaneProtobuf

/// One race, advanced a tick at a time. Deterministic: the same race, seed and tick length
/// replay the same race, whatever the wall clock does.
///
/// Karts drive `track` at their own pace, which varies a little from lap to lap so the order
/// changes. Gaps are timed the way timing loops do: a kart's gap is how long ago the first
/// kart passed the point where it is now, so gaps never shrink down the order.
struct RaceSimulation: Sendable {
    struct Kart: Sendable {
        let number: Int
        /// Metres per second this kart averages.
        let basePace: Double
        /// Metres per second on the current lap.
        var lapPace: Double
        /// Metres driven since the start line; negative on the grid behind it.
        var distance: Double
        /// Race seconds at which it crossed the finish line.
        var finishedAt: Double?
        var random: SplitMix64
    }

    let track: Track
    let laps: Int
    /// Race seconds each tick covers.
    let tickSeconds: Double
    private(set) var karts: [Kart]
    private(set) var tick = 0
    /// `leaderDistance[t]`: the farthest any kart had driven after tick `t`; never decreases.
    private var leaderDistance: [Double]

    var raceDistance: Double { Double(laps) * track.length }
    var elapsed: Double { Double(tick) * tickSeconds }
    var isFinished: Bool { karts.allSatisfy { $0.finishedAt != nil } }

    init(race: ScheduledRace, seed: UInt64, tickSeconds: Double) {
        let raceSeed = race.name.utf8.reduce(seed ^ 0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        var random = SplitMix64(seed: raceSeed)
        track = Track(around: Coordinate(latitude: race.latitude, longitude: race.longitude), seed: random.next())
        laps = max(1, race.laps)
        self.tickSeconds = tickSeconds
        karts = race.drivers.indices.map { grid in
            let pace = 13 + random.unit() * 2  // 47 to 54 km/h
            return Kart(
                number: grid + 1, basePace: pace, lapPace: pace, distance: -3 * Double(grid),
                finishedAt: nil, random: SplitMix64(seed: random.next()))
        }
        leaderDistance = [karts.map(\.distance).max() ?? 0]
    }

    /// Moves every kart on by one tick.
    mutating func advance() {
        tick += 1
        let now = elapsed
        for index in karts.indices where karts[index].finishedAt == nil {
            var kart = karts[index]
            let before = kart.distance
            kart.distance += kart.lapPace * tickSeconds
            if kart.distance >= raceDistance {
                // Crossed the line during this tick: when exactly, at this pace.
                kart.finishedAt = now - (kart.distance - raceDistance) / kart.lapPace
                kart.distance = raceDistance
            } else if (kart.distance / track.length).rounded(.down) > (before / track.length).rounded(.down) {
                kart.lapPace = kart.basePace * (0.97 + kart.random.unit() * 0.06)
            }
            karts[index] = kart
        }
        leaderDistance.append(max(leaderDistance[leaderDistance.count - 1], karts.map(\.distance).max() ?? 0))
    }

    /// Every kart's position now, stamped `recordedAt`.
    func locations(recordedAt: Google_Protobuf_Timestamp) -> KartLocations {
        var message = KartLocations()
        message.karts = karts.map { kart in
            let point = track.coordinate(atDistance: kart.distance < 0 ? kart.distance + track.length : kart.distance)
            var location = KartLocations.Kart()
            location.number = Int32(kart.number)
            location.latitude = point.latitude
            location.longitude = point.longitude
            location.recordedAt = recordedAt
            return location
        }
        return message
    }

    /// The order now: finishers by finishing time, then the rest by distance driven.
    func standings() -> Standings {
        let order = karts.sorted { a, b in
            switch (a.finishedAt, b.finishedAt) {
            case (let x?, let y?): return x != y ? x < y : a.number < b.number
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a.distance != b.distance ? a.distance > b.distance : a.number < b.number
            }
        }
        var message = Standings()
        message.entries = order.enumerated().map { offset, kart in
            var entry = Standings.Entry()
            entry.kartNumber = Int32(kart.number)
            entry.position = Int32(offset + 1)
            entry.lap = Int32(lap(of: kart))
            let gap = offset == 0 ? 0 : max(0, (kart.finishedAt ?? elapsed) - timeLeaderReached(kart.distance))
            entry.gapToLeader = Google_Protobuf_Duration(rounding: gap, rule: .towardZero)
            return entry
        }
        return message
    }

    /// The lap a kart is on, 1-based; the last lap once it has finished.
    private func lap(of kart: Kart) -> Int {
        kart.finishedAt != nil ? laps : min(laps, max(1, Int((kart.distance / track.length).rounded(.down)) + 1))
    }

    /// Race seconds at which the farthest kart first reached `distance` (interpolated within
    /// the tick); now, if no kart has got there.
    private func timeLeaderReached(_ distance: Double) -> Double {
        var low = 0
        var high = leaderDistance.count - 1
        guard leaderDistance[high] >= distance else { return elapsed }
        while low < high {
            let middle = (low + high) / 2
            if leaderDistance[middle] >= distance { high = middle } else { low = middle + 1 }
        }
        guard low > 0 else { return 0 }
        let before = leaderDistance[low - 1]
        let after = leaderDistance[low]
        let fraction = after > before ? (distance - before) / (after - before) : 1
        return (Double(low - 1) + fraction) * tickSeconds
    }
}
