import PitlaneCore

/// Where an update sits in an order's log, and the opaque `update_id` token clients see for it.
///
/// A token is `u1` followed by hex digits: the log's epoch (16), a tag of the order id (8) and
/// the update's sequence number within the order (12). Clients must treat it as opaque; the
/// server parses it to resume, and tells a malformed token (`.invalidArgument`), a token of
/// another order (`.invalidArgument`) and a token from another epoch of the log
/// (`.outOfRange`: the log was reset, so the client must bootstrap again) apart.
public struct UpdatePosition: Hashable, Sendable {
    /// The log's epoch: random, chosen when the database was created.
    public var epoch: UInt64
    /// The order's updates are numbered 1, 2, 3...; 0 is "before the first update".
    public var sequence: Int64
    /// A hash of the order id, so a token cannot be replayed against another order.
    public var orderTag: UInt32

    public init(epoch: UInt64, orderID: String, sequence: Int64) {
        self.epoch = epoch
        self.sequence = sequence
        self.orderTag = Self.tag(of: orderID)
    }

    /// The token clients pass back as `since_update_id`.
    public var token: String {
        "u1" + Self.hex(epoch, digits: 16) + Self.hex(UInt64(orderTag), digits: 8) + Self.hex(UInt64(sequence), digits: 12)
    }

    /// Parses `token` for `orderID` in the log of `epoch`.
    public static func parse(_ token: String, orderID: String, epoch: UInt64) throws(RPCError) -> UpdatePosition {
        let utf8 = Array(token.utf8)
        guard utf8.count == 38, utf8[0] == UInt8(ascii: "u"), utf8[1] == UInt8(ascii: "1"),
            let tokenEpoch = number(utf8[2..<18]), let tag = number(utf8[18..<26]),
            let sequence = number(utf8[26..<38])
        else {
            throw RPCError(code: .invalidArgument, message: "'\(token.prefix(64))' is not an update id")
        }
        guard tag == UInt64(Self.tag(of: orderID)) else {
            throw RPCError(code: .invalidArgument, message: "update id \(token) belongs to another order, not '\(orderID)'")
        }
        guard tokenEpoch == epoch else {
            throw OrderErrors.epochChanged(token: token, orderID: orderID, epoch: epoch, tokenEpoch: tokenEpoch)
        }
        return UpdatePosition(epoch: epoch, orderID: orderID, sequence: Int64(sequence))
    }

    /// FNV-1a over the order id's UTF-8 bytes.
    static func tag(of orderID: String) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in orderID.utf8 {
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
