/// The `grpc-timeout` header: at most 8 digits and a unit (H, M, S, m, u, n).
enum GRPCTimeout {
    /// Parses a header value; nil when it is malformed.
    static func parse(_ text: String) -> Duration? {
        var text = text
        return text.withUTF8 { bytes -> Duration? in
            guard (2...9).contains(bytes.count) else { return nil }
            var value: Int64 = 0
            for digit in bytes.dropLast() {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
                value = value * 10 + Int64(digit - UInt8(ascii: "0"))
            }
            switch bytes[bytes.count - 1] {
            case UInt8(ascii: "H"): return .seconds(value * 3600)
            case UInt8(ascii: "M"): return .seconds(value * 60)
            case UInt8(ascii: "S"): return .seconds(value)
            case UInt8(ascii: "m"): return .milliseconds(value)
            case UInt8(ascii: "u"): return .microseconds(value)
            case UInt8(ascii: "n"): return .nanoseconds(value)
            default: return nil
            }
        }
    }

    /// The header value for a timeout: the finest unit that fits in 8 digits, rounded up.
    static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = max(0, Double(seconds) * 1e9 + Double(attoseconds) / 1e9)
        for (unit, scale) in [("n", 1.0), ("u", 1e3), ("m", 1e6), ("S", 1e9), ("M", 6e10), ("H", 3.6e12)] {
            let value = (nanoseconds / scale).rounded(.up)
            if value < 100_000_000 { return "\(Int64(value))\(unit)" }
        }
        return "99999999H"
    }
}

/// `grpc-message` percent-encoding: bytes outside printable ASCII, and `%`, as `%XX`.
enum PercentEncoding {
    static func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            if (0x20...0x7E).contains(byte) && byte != UInt8(ascii: "%") {
                output.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                output += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return output
    }

    /// Decodes `%XX` sequences; malformed ones are kept as they are, as the spec asks.
    static func decode(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let value = UInt8(String(decoding: bytes[index + 1...index + 2], as: UTF8.self), radix: 16)
            {
                output.append(value)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: Swift.max(0, width - count)) + self
    }
}
