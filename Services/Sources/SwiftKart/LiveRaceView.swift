import Foundation
import PitlaneProtobuf

/// The terminal view of a followed race: a small track map with kart numbers on it, drawn
/// from the positions seen so far, and the leaderboard when it is shown. Pure: feed it events,
/// ask it for text.
public struct LiveRaceView: Sendable {
    public let race: Race
    public var showLeaderboard: Bool
    public private(set) var karts: [KartLocations.Kart] = []
    public private(set) var standings: [Standings.Entry] = []

    private var bounds: (minLatitude: Double, maxLatitude: Double, minLongitude: Double, maxLongitude: Double)?
    private var history: [(latitude: Double, longitude: Double)] = []
    private let width = 56
    private let height = 16

    public init(race: Race, showLeaderboard: Bool) {
        self.race = race
        self.showLeaderboard = showLeaderboard
    }

    public mutating func apply(_ event: FollowRaceResponse.OneOf_Event) {
        switch event {
        case .locations(let locations):
            karts = locations.karts
            for kart in locations.karts where history.count < 4_096 {
                history.append((kart.latitude, kart.longitude))
                extendBounds(kart.latitude, kart.longitude)
            }
        case .standings(let standings):
            self.standings = standings.entries
        }
    }

    /// The driver of a kart: kart `n` is the race's `n`th driver.
    public func driver(ofKart number: Int32) -> String {
        race.drivers.indices.contains(Int(number) - 1) ? race.drivers[Int(number) - 1] : "Kart \(number)"
    }

    /// The whole screen.
    public func render() -> String {
        var lines = ["\(race.name) — \(race.location) — \(race.laps) laps", ""]
        lines += map()
        if showLeaderboard {
            lines.append("")
            lines += leaderboard()
        }
        lines.append("")
        lines.append("l: \(showLeaderboard ? "hide" : "show") leaderboard   q: quit")
        return lines.joined(separator: "\n")
    }

    /// The leaderboard, one line per kart: position, number, driver, lap and gap.
    public func leaderboard() -> [String] {
        guard !standings.isEmpty else { return ["  (waiting for standings)"] }
        return standings.map { entry in
            let gap = entry.position == 1 ? "leader" : String(format: "+%.1fs", entry.gapToLeader.timeInterval)
            let name = driver(ofKart: entry.kartNumber).padding(toLength: 16, withPad: " ", startingAt: 0)
            return String(format: "%3d. #%-2d %@ lap %d/%d  %@", entry.position, entry.kartNumber, name, entry.lap, race.laps, gap)
        }
    }

    private mutating func extendBounds(_ latitude: Double, _ longitude: Double) {
        if var box = bounds {
            box.minLatitude = min(box.minLatitude, latitude)
            box.maxLatitude = max(box.maxLatitude, latitude)
            box.minLongitude = min(box.minLongitude, longitude)
            box.maxLongitude = max(box.maxLongitude, longitude)
            bounds = box
        } else {
            bounds = (latitude, latitude, longitude, longitude)
        }
    }

    private func cell(_ latitude: Double, _ longitude: Double) -> (row: Int, column: Int)? {
        guard let box = bounds else { return nil }
        let spanLatitude = max(box.maxLatitude - box.minLatitude, 1e-9)
        let spanLongitude = max(box.maxLongitude - box.minLongitude, 1e-9)
        let column = Int((longitude - box.minLongitude) / spanLongitude * Double(width - 1))
        let row = Int((box.maxLatitude - latitude) / spanLatitude * Double(height - 1))
        return (min(max(row, 0), height - 1), min(max(column, 0), width - 1))
    }

    private func map() -> [String] {
        var grid = Array(repeating: Array(repeating: Character(" "), count: width), count: height)
        for point in history {
            if let (row, column) = cell(point.latitude, point.longitude) { grid[row][column] = "·" }
        }
        for kart in karts {
            guard let (row, column) = cell(kart.latitude, kart.longitude) else { continue }
            for (offset, digit) in String(kart.number).enumerated() where column + offset < width {
                grid[row][column + offset] = digit
            }
        }
        return grid.map { "  " + String($0) }
    }
}
