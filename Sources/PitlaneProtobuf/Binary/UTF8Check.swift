/// UTF-8 validation by way of the standard library's fast decoder.
///
/// `String(decoding:as:)` replaces ill-formed sequences with U+FFFD; the input was valid
/// exactly when that changed nothing. ASCII, the common case, needs no comparison at all.
/// (`String(validating:as:)` would say the same, but goes through unspecialized generic
/// code that costs several times more per string.)
public enum UTF8Check {
    /// Whether `string`, made by `String(decoding: bytes, as: UTF8.self)`, holds exactly `bytes`: true when
    /// they were valid UTF-8, false when decoding replaced ill-formed sequences with U+FFFD.
    @inlinable
    public static func decodedUnchanged(_ string: String, from bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if isASCII(bytes) { return true }
        var string = string
        return string.withUTF8 { decoded in
            decoded.count == bytes.count && decoded.elementsEqual(bytes)
        }
    }

    /// Whether every byte is below 0x80, checked eight bytes at a time.
    @inlinable
    public static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        let count = bytes.count
        let highBits: UInt64 = 0x8080_8080_8080_8080
        guard count >= 8 else {
            for index in 0..<count where base[index] >= 0x80 { return false }
            return true
        }
        var index = 0
        while index + 8 <= count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & highBits != 0 { return false }
            index += 8
        }
        // The last eight bytes, overlapping what was checked, instead of a byte-by-byte tail.
        return raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) & highBits == 0
    }
}
