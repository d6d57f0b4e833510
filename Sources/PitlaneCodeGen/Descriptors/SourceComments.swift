import PitlaneProtobuf

/// The comments of a `.proto` file (`SourceCodeInfo`, which protoc sends for the files it asks
/// to generate), by the path of the element each documents: the leading comment, or the
/// trailing one when nothing leads.
struct SourceComments {
    private(set) var byPath: [[Int32]: String] = [:]

    init() {}

    /// Comments by path as given (tests).
    init(byPath: [[Int32]: String]) {
        self.byPath = byPath
    }

    /// Parses `SourceCodeInfo`.
    init(parsing buffer: UnsafeRawBufferPointer) throws {
        try forEachField(in: buffer) { tag, reader in
            guard tag.fieldNumber == 1 else { return false }  // location
            var path: [Int32] = []
            var leading = ""
            var trailing = ""
            try forEachField(in: reader.readLengthDelimited()) { tag, location in
                switch tag.fieldNumber {
                case 1 where tag.wireType == .lengthDelimited:  // packed, as protoc writes it
                    var packed = ProtoReader(try location.readLengthDelimited())
                    while packed.remaining > 0 { path.append(try packed.int32()) }
                case 1: path.append(try location.int32())
                case 3: leading = try location.string()
                case 4: trailing = try location.string()
                default: return false
                }
                return true
            }
            let comment = leading.isEmpty ? trailing : leading
            if comment.contains(where: { !$0.isWhitespace }) { byPath[path] = comment }
            return true
        }
    }

    /// The comment of the element at `path`, as doc-comment lines (`/// …`); empty when none.
    func docLines(_ path: [Int32]) -> [String] {
        guard let comment = byPath[path] else { return [] }
        var lines = comment.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            // protoc keeps the space after `//`; one is the doc comment's own.
            let text = line.hasPrefix(" ") ? line.dropFirst() : line[...]
            return String(text.reversed().drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" }).reversed())
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        while lines.first?.isEmpty == true { lines.removeFirst() }
        return lines.map { $0.isEmpty ? "///" : "/// " + $0 }
    }
}
