/// UTF-8 validation by way of the standard library's fast decoder.
///
/// `String(decoding:as:)` replaces ill-formed sequences with U+FFFD; the input was valid
/// exactly when that changed nothing. ASCII, the common case, needs no comparison at all.
/// (`String(validating:as:)` would say the same, but goes through unspecialized generic
/// code that costs several times more per string.)
public enum UTF8Check {
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
        var index = 0
        while index + 8 <= bytes.count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < bytes.count {
            if base[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }
}
