import Foundation

/// A point on Earth, in degrees.
public struct Coordinate: Sendable, Hashable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// A closed kart track: a polyline of real coordinates around a race's location, with the
/// distance along it precomputed so a kart's position is a lookup.
struct Track: Sendable {
    /// Corners of the track, in order; the last joins back to the first.
    let points: [Coordinate]
    /// `distances[i]` is how far point `i` is from the start line, in metres.
    private let distances: [Double]
    /// One lap, in metres.
    let length: Double

    /// A track of roughly `radius` metres around `center`, shaped by `seed`: the same seed
    /// draws the same track.
    init(around center: Coordinate, radius: Double = 120, seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let lobes = (random.unit() * 0.25, random.unit() * 0.15, random.unit() * 2 * .pi, random.unit() * 2 * .pi)
        let metresPerDegreeLatitude = 111_320.0
        let metresPerDegreeLongitude = metresPerDegreeLatitude * cos(center.latitude * .pi / 180)
        let corners = 48
        var local: [(x: Double, y: Double)] = []
        for corner in 0..<corners {
            let angle = Double(corner) / Double(corners) * 2 * .pi
            let scale = 1 + lobes.0 * sin(2 * angle + lobes.2) + lobes.1 * sin(3 * angle + lobes.3)
            local.append((radius * scale * cos(angle), 0.6 * radius * scale * sin(angle)))
        }
        points = local.map {
            Coordinate(
                latitude: center.latitude + $0.y / metresPerDegreeLatitude,
                longitude: center.longitude + $0.x / metresPerDegreeLongitude)
        }
        var distances = [0.0]
        for index in 1...corners {
            let from = local[index - 1]
            let to = local[index % corners]
            distances.append(distances[index - 1] + ((to.x - from.x) * (to.x - from.x) + (to.y - from.y) * (to.y - from.y)).squareRoot())
        }
        length = distances.removeLast()
        self.distances = distances
    }

    /// Where a kart is after driving `distance` metres from the start line (any number of laps).
    func coordinate(atDistance distance: Double) -> Coordinate {
        let onLap = distance.truncatingRemainder(dividingBy: length)
        // The segment that holds `onLap`: the last corner at or before it.
        var low = 0
        var high = distances.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if distances[middle] <= onLap { low = middle } else { high = middle - 1 }
        }
        let from = points[low]
        let to = points[(low + 1) % points.count]
        let segmentEnd = low + 1 < distances.count ? distances[low + 1] : length
        let fraction = (onLap - distances[low]) / (segmentEnd - distances[low])
        return Coordinate(
            latitude: from.latitude + (to.latitude - from.latitude) * fraction,
            longitude: from.longitude + (to.longitude - from.longitude) * fraction)
    }
}

/// A small, fast, seedable random number generator (SplitMix64): the simulation must replay
/// exactly from its seed, which `SystemRandomNumberGenerator` cannot do.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform value in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
