import PitlaneCore

/// Where an update sits in a feed, and the opaque resume token clients hold for it.
///
/// A token is `u1` followed by hex digits: the log's epoch (16), a tag of the key (8) and the
/// update's sequence number within the key (12). Clients treat it as opaque and pass it back
/// to resume; ``parse(_:key:epoch:names:)`` tells a token that is not one, a token of another
/// key and a token from another epoch of the log (the log was reset: the client must start
/// over from a snapshot) apart, each a ``FeedError``.
public struct FeedPosition: Hashable, Sendable {
    /// The log's epoch: random, chosen when its database was created and kept in it.
    public var epoch: UInt64
    /// A key's updates are numbered 1, 2, 3…; 0 is "before the first update".
    public var sequence: Int64
    /// A hash of the key, so a token cannot be replayed against another key.
    public var keyTag: UInt32

    /// The position of update `sequence` of `key` in the log of `epoch`.
    public init(epoch: UInt64, key: String, sequence: Int64) {
        self.epoch = epoch
        self.sequence = sequence
        keyTag = Self.tag(of: key)
    }

    /// The token clients pass back to resume after this update.
    public var token: String {
        "u1" + Self.hex(epoch, digits: 16) + Self.hex(UInt64(keyTag), digits: 8) + Self.hex(UInt64(sequence), digits: 12)
    }

    /// Parses `token` for `key` in the log of `epoch`.
    ///
    /// - Throws: ``FeedError`` `.malformedToken` for what is not a token, `.tokenOfAnotherKey`,
    ///   `.epochChanged` for a token from another epoch; `names` words them.
    public static func parse(_ token: String, key: String, epoch: UInt64, names: FeedNames) throws(FeedError) -> FeedPosition {
        let utf8 = Array(token.utf8)
        guard utf8.count == 38, utf8[0] == UInt8(ascii: "u"), utf8[1] == UInt8(ascii: "1"),
            let tokenEpoch = number(utf8[2..<18]), let tag = number(utf8[18..<26]), let sequence = number(utf8[26..<38])
        else {
            throw .malformedToken(token, names: names)
        }
        guard tag == UInt64(Self.tag(of: key)) else { throw .tokenOfAnotherKey(token, key: key, names: names) }
        guard tokenEpoch == epoch else { throw .epochChanged(token, key: key, epoch: epoch, tokenEpoch: tokenEpoch, names: names) }
        return FeedPosition(epoch: epoch, key: key, sequence: Int64(sequence))
    }

    /// FNV-1a over the key's UTF-8 bytes.
    static func tag(of key: String) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in key.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return hash
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let alphabet = Array("0123456789abcdef".utf8)
        var bytes = [UInt8](repeating: UInt8(ascii: "0"), count: digits)
        var rest = value
        for index in stride(from: digits - 1, through: 0, by: -1) {
            bytes[index] = alphabet[Int(rest & 0xF)]
            rest >>= 4
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Lowercase hex digits only; nil for anything else.
    private static func number(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for digit in digits {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt64(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt64(digit - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return value
    }
}
