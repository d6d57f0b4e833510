import PitlaneCore
import PitlaneProtobuf

extension Metadata {
    /// Metadata as HTTP/2 header fields: `-bin` values base64-encoded (unpadded).
    package var headerFields: [(name: String, value: String)] {
        map { element in
            switch element.value {
            case .string(let text): (element.key, text)
            case .binary(let bytes): (element.key, Base64.encode(bytes, padded: false))
            }
        }
    }

    /// Adds a received header field unless gRPC or HTTP/2 reserve its name; `-bin` values
    /// that are not base64 are dropped (the spec allows ignoring a malformed binary value).
    package mutating func addHeaderField(name: String, value: String) {
        guard !Metadata.isReserved(name) else { return }
        if name.hasSuffix("-bin") {
            // Several binary values may arrive comma-separated in one field.
            for part in value.split(separator: ",") {
                if let bytes = Base64.decode(part.trimmingCharacters(in: " ")) { addBinary(bytes, forKey: name) }
            }
        } else {
            addString(value, forKey: name)
        }
    }
}

extension Substring {
    /// Without `character` at either end; ASCII characters only (the header grammar's).
    package func trimmingCharacters(in character: Character) -> String {
        guard let byte = character.asciiValue else { return String(self) }
        var view = utf8[...]
        while view.first == byte { view = view.dropFirst() }
        while view.last == byte { view = view.dropLast() }
        return String(decoding: view, as: UTF8.self)
    }
}
