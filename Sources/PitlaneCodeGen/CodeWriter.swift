/// Accumulates Swift source with indentation.
struct CodeWriter {
    private(set) var text = ""
    private var indentation = ""

    /// Writes one line at the current indentation; an empty call writes an empty line.
    mutating func line(_ line: String = "") {
        text += line.isEmpty ? "\n" : indentation + line + "\n"
    }

    /// Writes a `.proto` comment's doc-comment lines; with `continued`, an empty `///` after
    /// them (when there are any) so the generator's own lines that follow read as a new
    /// paragraph of the same comment.
    mutating func doc(_ lines: [String], continued: Bool = false) {
        for docLine in lines { line(docLine) }
        if continued, !lines.isEmpty { line("///") }
    }

    /// Writes `opening`, the body one level deeper, then `closing`.
    mutating func block(_ opening: String, _ body: (inout CodeWriter) -> Void) {
        line(opening)
        indentation += "    "
        body(&self)
        indentation.removeLast(4)
        line("}")
    }

    /// Writes a `switch` whose `case` lines stay at the switch's own indentation.
    mutating func switchBlock(_ subject: String, _ body: (inout CodeWriter) -> Void) {
        line("switch \(subject) {")
        body(&self)
        line("}")
    }
}
