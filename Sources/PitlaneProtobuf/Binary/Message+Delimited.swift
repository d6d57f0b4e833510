// Length-delimited message streams: each message preceded by its size as a varint, the format
// of C++'s SerializeDelimitedToOstream / ParseDelimitedFromZeroCopyStream and Java's
// writeDelimitedTo / parseDelimitedFrom.

extension Message {
    /// The message in protobuf binary format, preceded by its size as a varint: one record
    /// of a length-delimited stream.
    ///
    /// ```swift
    /// var log: [UInt8] = []
    /// for race in races { log += try race.serializedDelimitedBytes() }
    /// ```
    ///
    /// - Throws: `ProtobufEncodingError` when required fields are missing and `partial` is false.
    @inlinable
    public func serializedDelimitedBytes(
        partial: Bool = false, options: EncodingOptions = .init()
    ) throws -> [UInt8] {
        guard partial || isInitialized else { throw ProtobufEncodingError(messageName: Self.protoMessageName) }
        let size = encodedSize()
        let total = ProtoSize.lengthDelimited(size)
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            // The writer fills from the end, so the size goes in front of the fields without a copy.
            var writer = ProtoWriter(
                filling: UnsafeMutableRawBufferPointer(buffer), deterministic: options.deterministic
            )
            encodeFields(to: &writer)
            writer.writeVarint(UInt64(size))
            precondition(writer.bytesFree == 0, "ProtoWriter: encodedSize() was larger than what was written")
            count = total
        }
    }
}

extension Sequence where Element: Message {
    /// The messages as one length-delimited stream, each preceded by its size as a varint.
    ///
    /// ```swift
    /// let bytes = try [first, second].serializedDelimitedBytes()
    /// ```
    public func serializedDelimitedBytes(
        partial: Bool = false, options: EncodingOptions = .init()
    ) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for message in self {
            bytes += try message.serializedDelimitedBytes(partial: partial, options: options)
        }
        return bytes
    }
}

extension Array where Element: Message {
    /// Every message of a length-delimited stream, in order.
    ///
    /// ```swift
    /// let races = try [Race](delimitedBytes: bytes)
    /// ```
    ///
    /// - Throws: `ProtobufDecodingError`, as `DelimitedMessageReader.next(_:partial:options:)` does.
    public init<Bytes: Sequence<UInt8>>(
        delimitedBytes bytes: Bytes, partial: Bool = false, options: DecodingOptions = .defaults
    ) throws {
        var reader = DelimitedMessageReader(bytes)
        self = []
        while let message = try reader.next(Element.self, partial: partial, options: options) {
            append(message)
        }
    }
}

/// Reads the messages of a length-delimited stream held in memory, one at a time.
///
/// ```swift
/// var reader = DelimitedMessageReader(bytes)
/// while let race = try reader.next(Race.self) { print(race.name) }
/// ```
///
/// A message longer than `DecodingOptions.sizeLimit`, or than 2 GiB - 1 (protobuf's own
/// limit), is rejected from its size alone. Error offsets count from the start of the stream.
public struct DelimitedMessageReader: Sendable {
    private var parser: DelimitedParser

    /// A reader over `bytes`; an `[UInt8]` is read in place, other sequences are copied once.
    public init<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        parser = DelimitedParser(Array(bytes))
    }

    /// The next message, or nil when the stream ends cleanly after the previous one.
    ///
    /// - Throws: `ProtobufDecodingError` with `.truncated` when the stream ends inside a size
    ///   or a message, `.tooLarge` when a size exceeds the limit, `.malformedVarint` for a size
    ///   longer than 10 bytes, or whatever decoding the message itself throws. After a message
    ///   that fails to decode the framing is intact, and the next call reads the one after it.
    public mutating func next<M: Message>(
        _ type: M.Type, partial: Bool = false, options: DecodingOptions = .defaults
    ) throws -> M? {
        if let message = try parser.next(M.self, partial: partial, options: options) { return message }
        try parser.checkEnd(M.self)
        return nil
    }
}

/// The messages of a length-delimited stream arriving as chunks of bytes (from a socket, a
/// pipe or a file), each yielded as soon as its last byte has arrived.
///
/// ```swift
/// for try await race in chunks.delimitedMessages(of: Race.self) { print(race.name) }
/// ```
///
/// Chunks need not line up with messages. The iterator holds at most one incomplete message
/// besides the current chunk, and a size above the limit (`DecodingOptions.sizeLimit`, at most
/// 2 GiB - 1) throws `.tooLarge` before any of that message is buffered. A base that ends
/// inside a message throws `.truncated`. Iteration ends after the first error.
public struct DelimitedMessages<M: Message, Base: AsyncSequence>: AsyncSequence
where Base.Element: Sequence<UInt8> {
    /// Each element is one decoded message.
    public typealias Element = M

    let base: Base
    let partial: Bool
    let options: DecodingOptions

    /// An iterator that reads the base from its start.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), partial: partial, options: options)
    }

    /// Reads chunks from the base until a whole message is buffered.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let partial: Bool
        let options: DecodingOptions
        var parser = DelimitedParser()
        var done = false

        /// The next message, waiting for its bytes; nil once the base ends between messages.
        public mutating func next() async throws -> M? {
            guard !done else { return nil }
            do {
                while true {
                    if let message = try parser.next(M.self, partial: partial, options: options) {
                        return message
                    }
                    guard let chunk = try await base.next() else {
                        done = true
                        try parser.checkEnd(M.self)
                        return nil
                    }
                    parser.append(chunk)
                }
            } catch {
                done = true
                throw error
            }
        }
    }
}

extension DelimitedMessages: Sendable where Base: Sendable {}

extension AsyncSequence where Element: Sequence<UInt8> {
    /// The length-delimited messages in this sequence of byte chunks.
    ///
    /// ```swift
    /// for try await event in socketChunks.delimitedMessages(of: RaceEvent.self) { handle(event) }
    /// ```
    public func delimitedMessages<M: Message>(
        of type: M.Type, partial: Bool = false, options: DecodingOptions = .defaults
    ) -> DelimitedMessages<M, Self> {
        DelimitedMessages(base: self, partial: partial, options: options)
    }
}

/// Cuts a length-delimited stream into messages as its bytes arrive; the in-memory reader is
/// the same machine given every byte at once.
struct DelimitedParser: Sendable {
    /// Bytes received and not yet dropped; those before `start` are read.
    private var buffer: [UInt8]
    /// Where the next message's size begins in `buffer`.
    private var start = 0
    /// Stream bytes dropped from the front of `buffer`, so errors carry stream offsets.
    private var dropped = 0

    init(_ bytes: [UInt8] = []) {
        buffer = bytes
    }

    mutating func append<Bytes: Sequence<UInt8>>(_ chunk: Bytes) {
        if start > 0 {
            dropped += start
            if start == buffer.count {
                // Keep a small buffer's storage for the next chunk; let one that held a large
                // message go, so its memory is not kept for the life of the stream.
                let keep = buffer.capacity <= 64 * 1024
                buffer.removeAll(keepingCapacity: keep)
            } else {
                buffer.removeSubrange(..<start)
            }
            start = 0
        }
        buffer.append(contentsOf: chunk)
    }

    /// The next message, or nil when the buffer holds no whole one yet.
    mutating func next<M: Message>(_ type: M.Type, partial: Bool, options: DecodingOptions) throws -> M? {
        let limit = max(0, min(options.sizeLimit, Int(Int32.max)))
        var index = start
        var length: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard index < buffer.count else { return nil }
            let byte = buffer[index]
            index += 1
            length |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
            guard shift < 70 else { throw Self.failure(M.self, .malformedVarint, at: dropped + start) }
        }
        guard length <= UInt64(limit) else {
            let code = ProtobufDecodingError.Code.tooLarge(size: Int(clamping: length), limit: limit)
            throw Self.failure(M.self, code, at: dropped + start)
        }
        let count = Int(length)
        guard buffer.count - index >= count else { return nil }
        // Step past the message before decoding it: if it fails to decode, the framing is still
        // sound and the caller may go on with the next one.
        let body = index..<(index + count)
        start = body.upperBound
        do {
            return try buffer.withUnsafeBytes { raw in
                var message = M()
                let bytes = UnsafeRawBufferPointer(rebasing: raw[body])
                try message.merge(from: bytes, partial: partial, options: options)
                return message
            }
        } catch var error as ProtobufDecodingError {
            error.offset += dropped + body.lowerBound
            throw error
        }
    }

    /// Throws `.truncated` unless the input ended between two messages.
    func checkEnd<M: Message>(_ type: M.Type) throws {
        guard start == buffer.count else { throw Self.failure(M.self, .truncated, at: dropped + buffer.count) }
    }

    private static func failure<M: Message>(
        _ type: M.Type, _ code: ProtobufDecodingError.Code, at offset: Int
    ) -> ProtobufDecodingError {
        ProtobufDecodingError(code: code, offset: offset, messageName: M.protoMessageName)
    }
}
