/// Why a protobuf payload could not be decoded, and where.
///
/// `offset` is the byte position in the input where the problem was found; `path` names
/// the fields from the outermost message down to the one being read, for example
/// `Race.start_time(3) > seconds(1)` reads as field numbers `[3, 1]`.
public struct ProtobufDecodingError: Error, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: Hashable, Sendable {
            case truncated
            case malformedVarint
            case invalidWireType(UInt8)
            case invalidFieldNumber(UInt64)
            case unmatchedEndGroup
            case invalidUTF8
            case recursionLimitExceeded(Int)
            case lengthBeyondInput(UInt64)
            case tooLarge(size: Int, limit: Int)
            case missingRequiredFields
            case invalidPackedLength(Int)
        }

        let base: Base

        /// The input ends in the middle of a field.
        public static let truncated = Code(base: .truncated)
        /// A varint runs longer than 10 bytes.
        public static let malformedVarint = Code(base: .malformedVarint)
        /// A tag carries wire type 6 or 7, which protobuf does not define.
        public static func invalidWireType(_ type: UInt8) -> Code { Code(base: .invalidWireType(type)) }
        /// A tag carries field number 0 or one above 2^29 - 1.
        public static func invalidFieldNumber(_ number: UInt64) -> Code { Code(base: .invalidFieldNumber(number)) }
        /// An END_GROUP tag that closes no open group, or the wrong one.
        public static let unmatchedEndGroup = Code(base: .unmatchedEndGroup)
        /// A string field that must hold UTF-8 does not.
        public static let invalidUTF8 = Code(base: .invalidUTF8)
        /// Messages nest deeper than the limit.
        public static func recursionLimitExceeded(_ limit: Int) -> Code { Code(base: .recursionLimitExceeded(limit)) }
        /// A length prefix points past the end of the input.
        public static func lengthBeyondInput(_ length: UInt64) -> Code { Code(base: .lengthBeyondInput(length)) }
        /// The input is larger than the caller allows.
        public static func tooLarge(size: Int, limit: Int) -> Code { Code(base: .tooLarge(size: size, limit: limit)) }
        /// A required field is absent.
        public static let missingRequiredFields = Code(base: .missingRequiredFields)
        /// A packed fixed-width field whose length is not a multiple of the element size.
        public static func invalidPackedLength(_ length: Int) -> Code { Code(base: .invalidPackedLength(length)) }

        /// A short English description of the problem, such as "varint longer than 10 bytes".
        public var description: String {
            switch base {
            case .truncated: "input ends inside a field"
            case .malformedVarint: "varint longer than 10 bytes"
            case .invalidWireType(let type): "invalid wire type \(type)"
            case .invalidFieldNumber(let number): "invalid field number \(number)"
            case .unmatchedEndGroup: "END_GROUP tag without a matching START_GROUP"
            case .invalidUTF8: "string field is not valid UTF-8"
            case .recursionLimitExceeded(let limit): "messages nested deeper than \(limit)"
            case .lengthBeyondInput(let length): "length \(length) runs past the end of the input"
            case .tooLarge(let size, let limit): "input of \(size) bytes exceeds the limit of \(limit)"
            case .missingRequiredFields: "required fields are missing"
            case .invalidPackedLength(let length): "packed field length \(length) is not a multiple of its element size"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// The byte offset in the input where decoding stopped.
    public var offset: Int
    /// Field numbers from the outermost message to the field being read when it failed.
    public var path: [Int]
    /// The protobuf name of the message being decoded at the top level.
    public var messageName: String

    /// An error with the given code at byte `offset`; decoding fills in `path` and `messageName` as it unwinds.
    public init(code: Code, offset: Int, path: [Int] = [], messageName: String = "") {
        self.code = code
        self.offset = offset
        self.path = path
        self.messageName = messageName
    }

    /// The message name, the problem, its byte offset and the field path, on one line.
    public var description: String {
        var text = "cannot decode \(messageName.isEmpty ? "message" : messageName): \(code) at byte \(offset)"
        if !path.isEmpty {
            text += " (field path \(path.map(String.init).joined(separator: ".")))"
        }
        return text
    }
}
