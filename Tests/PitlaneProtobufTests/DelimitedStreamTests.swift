import PitlaneProtobuf
import Testing

// Length-delimited streams: each message preceded by its size as a varint, read from memory
// and from chunks arriving over time. Python's side of the format is checked in
// CrossImplementationTests.

/// Reads messages until the stream ends or fails; an error other than ProtobufDecodingError
/// is an issue.
private func readAll(
    _ wire: [UInt8], options: DecodingOptions = .defaults, sourceLocation: SourceLocation = #_sourceLocation
) -> (messages: [AllTypes], error: ProtobufDecodingError?) {
    var reader = DelimitedMessageReader(wire)
    var read: [AllTypes] = []
    do {
        while let message = try reader.next(AllTypes.self, options: options) {
            read.append(message)
        }
        return (read, nil)
    } catch let error as ProtobufDecodingError {
        return (read, error)
    } catch {
        Issue.record("threw \(type(of: error)), not ProtobufDecodingError: \(error)", sourceLocation: sourceLocation)
        return (read, nil)
    }
}

/// The same, with `chunks` arriving one by one through an AsyncStream.
private func readAll(
    chunks: [[UInt8]], options: DecodingOptions = .defaults, sourceLocation: SourceLocation = #_sourceLocation
) async -> (messages: [AllTypes], error: ProtobufDecodingError?) {
    let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
    for chunk in chunks {
        continuation.yield(chunk)
    }
    continuation.finish()
    var read: [AllTypes] = []
    do {
        for try await message in stream.delimitedMessages(of: AllTypes.self, options: options) {
            read.append(message)
        }
        return (read, nil)
    } catch let error as ProtobufDecodingError {
        return (read, error)
    } catch {
        Issue.record("threw \(type(of: error)), not ProtobufDecodingError: \(error)", sourceLocation: sourceLocation)
        return (read, nil)
    }
}

/// `bytes` cut into chunks of `size` (the last may be shorter).
private func chunked(_ bytes: [UInt8], _ size: Int) -> [[UInt8]] {
    stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
}

@Suite("Length-delimited message streams", .timeLimit(.minutes(1)))
struct DelimitedStreamTests {
    /// A one-byte message, an empty one (size 0) and one over 127 bytes (a two-byte size).
    static let messages: [AllTypes] = [
        .with { $0.int32Value = 1 },
        AllTypes(),
        .with {
            $0.stringValue = String(repeating: "lap ", count: 40)
            $0.repeatedInt32 = [1, -1, 300]
        },
    ]

    /// Where each message's size starts in the encoding of `messages`, and where it ends.
    static func boundaries(_ wire: [UInt8]) -> [Int] { [0, 3, 4, wire.count] }

    static let allTypesName = "pitlane.test.proto3.AllTypes"

    // MARK: Writing

    @Test("Each message is written as its size as a varint, then its bytes")
    func writing() throws {
        #expect(try hex(AllTypes.with { $0.int32Value = 1 }.serializedDelimitedBytes()) == "02 08 01")
        #expect(try hex(AllTypes().serializedDelimitedBytes()) == "00")
        #expect(try hex(AllTypes.with { $0.stringValue = "ab" }.serializedDelimitedBytes()) == "04 72 02 61 62")

        let long = Self.messages[2]
        let body = try long.serializedBytes()
        #expect((128..<16384).contains(body.count), "the size should take two bytes")
        let sizeBytes: [UInt8] = [UInt8(body.count & 0x7F) | 0x80, UInt8(body.count >> 7)]
        #expect(try long.serializedDelimitedBytes() == sizeBytes + body)

        let wire = try Self.messages.serializedDelimitedBytes()
        #expect(wire == bytes("02 08 01") + bytes("00") + sizeBytes + body)
        #expect(try [AllTypes]().serializedDelimitedBytes() == [])
    }

    // MARK: Reading from memory

    @Test("Three messages, one of them empty, read back in order; then nil, and nil again")
    func readingBack() throws {
        let wire = try Self.messages.serializedDelimitedBytes()
        var reader = DelimitedMessageReader(wire)
        for expected in Self.messages {
            let message = try reader.next(AllTypes.self)
            #expect(message == expected)
        }
        let end = try reader.next(AllTypes.self)
        #expect(end == nil)
        let afterEnd = try reader.next(AllTypes.self)
        #expect(afterEnd == nil)

        #expect(try [AllTypes](delimitedBytes: wire) == Self.messages)
        #expect(try [AllTypes](delimitedBytes: wire[...]) == Self.messages)
        #expect(try [AllTypes](delimitedBytes: [UInt8]()) == [])
    }

    @Test("A stream cut anywhere gives the whole messages before the cut, then .truncated at the cut")
    func truncated() async throws {
        let wire = try Self.messages.serializedDelimitedBytes()
        let boundaries = Self.boundaries(wire)
        for cut in 0...wire.count {
            let prefix = Array(wire[..<cut])
            let (read, error) = readAll(prefix)
            let whole = boundaries.filter { $0 <= cut }.count - 1
            #expect(read == Array(Self.messages.prefix(whole)), "cut at \(cut)")
            if boundaries.contains(cut) {
                #expect(error == nil, "cut at \(cut)")
            } else {
                // A cut at 5 falls inside the third message's two-byte size, the others inside a body.
                #expect(error?.code == .truncated, "cut at \(cut): \(String(describing: error))")
                #expect(error?.offset == cut, "cut at \(cut)")
                #expect(error?.messageName == Self.allTypesName, "cut at \(cut)")
            }
            // The async sequence, fed two bytes at a time, must agree exactly.
            let (readAsync, errorAsync) = await readAll(chunks: chunked(prefix, 2))
            #expect(readAsync == read, "cut at \(cut), async")
            #expect(errorAsync == error, "cut at \(cut), async")
        }
    }

    @Test("A size above the limit throws .tooLarge from the size alone; a size at the limit reads")
    func sizeLimit() throws {
        let hundred = AllTypes.with { $0.stringValue = String(repeating: "a", count: 98) }
        #expect(hundred.encodedSize() == 100)
        let wire = try hundred.serializedDelimitedBytes()
        var options = DecodingOptions()
        options.sizeLimit = 100
        let atHundred = readAll(wire, options: options)
        #expect(atHundred.messages == [hundred])
        #expect(atHundred.error == nil)

        options.sizeLimit = 99
        let (read, error) = readAll(wire, options: options)
        #expect(read.isEmpty)
        #expect(error?.code == ProtobufDecodingError.Code.tooLarge(size: 100, limit: 99))
        #expect(error?.offset == 0)
        #expect(error?.messageName == Self.allTypesName)

        // Without a size limit, protobuf's own 2 GiB - 1 applies; no body follows the size.
        let twoGiB = readAll(bytes("02 08 01 80 80 80 80 08"))
        #expect(twoGiB.messages == [Self.messages[0]])
        #expect(twoGiB.error?.code == ProtobufDecodingError.Code.tooLarge(size: 1 << 31, limit: Int(Int32.max)))
        #expect(twoGiB.error?.offset == 3)
        let atLimit = readAll(bytes("ff ff ff ff 07"))
        #expect(atLimit.error?.code == .truncated, "2 GiB - 1 is allowed, and then the body is missing")
    }

    @Test("A size varint longer than 10 bytes throws .malformedVarint")
    func malformedSize() {
        let (read, error) = readAll(bytes("00 ff ff ff ff ff ff ff ff ff ff 01"))
        #expect(read == [AllTypes()])
        #expect(error?.code == .malformedVarint)
        #expect(error?.offset == 1)
    }

    @Test("A message that fails to decode throws with its stream offset; the next one still reads")
    func badMessageIsSkipped() throws {
        // 02 08 01: int32_value = 1. 01 08: a tag for int32_value with no value. 00: empty.
        var reader = DelimitedMessageReader(bytes("02 08 01  01 08  00"))
        let first = try reader.next(AllTypes.self)
        #expect(first == Self.messages[0])
        do {
            _ = try reader.next(AllTypes.self)
            Issue.record("the second message decoded")
        } catch let error as ProtobufDecodingError {
            #expect(error.code == .truncated)
            #expect(error.offset == 5, "the end of the second message's body, counted from the stream's start")
            #expect(error.messageName == Self.allTypesName)
        }
        let third = try reader.next(AllTypes.self)
        #expect(third == AllTypes())
        let end = try reader.next(AllTypes.self)
        #expect(end == nil)
    }

    // MARK: Reading as bytes arrive

    @Test("Chunks of every size from 1 to 7 bytes, and empty chunks, give the same messages", arguments: 1...7)
    func chunks(size: Int) async throws {
        let wire = try Self.messages.serializedDelimitedBytes()
        let pieces = chunked(wire, size)
        let plain = await readAll(chunks: pieces)
        #expect(plain.messages == Self.messages)
        #expect(plain.error == nil)
        let empty: [UInt8] = []
        let withEmpty = await readAll(chunks: [empty] + pieces.flatMap { [$0, empty] })
        #expect(withEmpty.messages == Self.messages)
        #expect(withEmpty.error == nil)
    }

    @Test("Each message is yielded as soon as its last byte arrives, while the stream stays open")
    func yieldsEarly() async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        var iterator = stream.delimitedMessages(of: AllTypes.self).makeAsyncIterator()
        continuation.yield(bytes("02 08"))
        continuation.yield(bytes("01 00 02"))  // ends the first message, holds the second, starts the third
        let first = try await iterator.next()
        #expect(first == Self.messages[0])
        let second = try await iterator.next()
        #expect(second == AllTypes())
        continuation.yield(bytes("08 07"))
        let third = try await iterator.next()
        #expect(third == AllTypes.with { $0.int32Value = 7 })
        continuation.finish()
        let end = try await iterator.next()
        #expect(end == nil)
    }

    @Test("A size above the limit throws before the body arrives, and the iteration ends")
    func tooLargeWithoutWaiting() async throws {
        var options = DecodingOptions()
        options.sizeLimit = 100
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        defer { continuation.finish() }
        var iterator = stream.delimitedMessages(of: AllTypes.self, options: options).makeAsyncIterator()
        continuation.yield(bytes("02 08 01  65"))  // 0x65 = 101 bytes, which never come
        let first = try await iterator.next()
        #expect(first == Self.messages[0])
        do {
            _ = try await iterator.next()
            Issue.record("the oversized message did not throw")
        } catch let error as ProtobufDecodingError {
            #expect(error.code == .tooLarge(size: 101, limit: 100))
            #expect(error.offset == 3)
        }
        let after = try await iterator.next()
        #expect(after == nil)
    }
}
