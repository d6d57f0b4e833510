import PitlaneProtobuf

// Names and helpers the protobuf tests share.

typealias AllTypes = Pitlane_Test_Proto3_AllTypes
typealias Nested = Pitlane_Test_Proto3_Nested
typealias Subset = Pitlane_Test_Proto3_Subset
typealias Proto2Types = Pitlane_Test_Proto2_Proto2Types
typealias Child = Pitlane_Test_Proto2_Child
typealias EditionTypes = Pitlane_Test_Editions_EditionTypes

/// Bytes from hex pairs, spaces ignored: `"08 96 01"`.
func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.filter { !$0.isWhitespace })
    precondition(digits.count % 2 == 0, "odd hex string \(hex)")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// Hex pairs separated by spaces, so a failed comparison shows readable wire bytes.
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
}
