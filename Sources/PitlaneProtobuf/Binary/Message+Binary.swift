/// Why a message could not be encoded.
public struct ProtobufEncodingError: Error, Hashable, CustomStringConvertible {
    /// The protobuf name of the message that was being encoded.
    public var messageName: String

    /// An error for the message named `messageName` (its fully qualified protobuf name).
    public init(messageName: String) {
        self.messageName = messageName
    }

    /// Names the message and says to encode with `partial: true` to allow missing required fields.
    public var description: String {
        "cannot encode \(messageName): required fields are missing (encode with partial: true to allow it)"
    }
}

/// Choices for binary encoding.
public struct EncodingOptions: Sendable {
    /// Write map entries in key order, so that equal messages give equal bytes. Default false.
    public var deterministic: Bool = false

    /// Options for binary encoding; see ``deterministic``.
    public init(deterministic: Bool = false) {
        self.deterministic = deterministic
    }
}

extension Message {
    /// The message in protobuf binary format.
    ///
    /// - Parameter partial: encode even when required fields are missing.
    /// - Parameter options: how to encode (deterministic map order, say).
    /// - Throws: `ProtobufEncodingError` when required fields are missing and `partial` is false.
    @inlinable
    public func serializedBytes(partial: Bool = false, options: EncodingOptions = .init()) throws -> [UInt8] {
        guard partial || isInitialized else { throw ProtobufEncodingError(messageName: Self.protoMessageName) }
        let size = encodedSize()
        var bytes = EncodingBuffer.bytes(count: size)
        bytes.withUnsafeMutableBytes { buffer in
            var writer = ProtoWriter(filling: buffer, deterministic: options.deterministic)
            encodeFields(to: &writer)
            precondition(writer.bytesFree == 0, "ProtoWriter: encodedSize() was larger than what was written")
        }
        return bytes
    }

    /// Encodes the message at the end of `buffer`, which must hold exactly `encodedSize()` bytes,
    /// for callers that put a header in front (gRPC's length prefix) without a copy.
    @inlinable
    public func encode(into buffer: UnsafeMutableRawBufferPointer, options: EncodingOptions = .init()) {
        var writer = ProtoWriter(filling: buffer, deterministic: options.deterministic)
        encodeFields(to: &writer)
        precondition(writer.bytesFree == 0, "ProtoWriter: buffer size differs from encodedSize()")
    }

    /// Decodes a message from protobuf binary format.
    ///
    /// - Parameters:
    ///   - bytes: the encoded message; any contiguous byte collection (`[UInt8]`, `Data`, slices).
    ///   - partial: accept a message whose required fields are missing.
    ///   - options: recursion and size limits, unknown-field handling.
    /// - Throws: `ProtobufDecodingError` saying what is wrong and at which byte.
    @inlinable
    public init<Bytes: Sequence<UInt8>>(
        serializedBytes bytes: Bytes, partial: Bool = false, options: DecodingOptions = .defaults
    ) throws {
        self.init()
        try merge(serializedBytes: bytes, partial: partial, options: options)
    }

    /// Merges fields decoded from protobuf binary format into this message: scalars are
    /// replaced, repeated fields appended, messages merged.
    @inlinable
    public mutating func merge<Bytes: Sequence<UInt8>>(
        serializedBytes bytes: Bytes, partial: Bool = false, options: DecodingOptions = .defaults
    ) throws {
        let decoded: Void? = try bytes.withContiguousStorageIfAvailable { buffer in
            try merge(from: UnsafeRawBufferPointer(buffer), partial: partial, options: options)
        }
        if decoded == nil {
            try Array(bytes).withUnsafeBytes { try merge(from: $0, partial: partial, options: options) }
        }
    }

    /// Merges fields decoded from a raw buffer into this message.
    public mutating func merge(
        from buffer: UnsafeRawBufferPointer, partial: Bool = false, options: DecodingOptions = .defaults
    ) throws {
        do {
            guard buffer.count <= options.sizeLimit else {
                throw ProtobufDecodingError(code: .tooLarge(size: buffer.count, limit: options.sizeLimit), offset: 0)
            }
            var reader = ProtoReader(buffer, options: options)
            try decodeFields(from: &reader)
            guard partial || isInitialized else {
                throw ProtobufDecodingError(code: .missingRequiredFields, offset: buffer.count)
            }
        } catch var failure as ProtobufDecodingError {
            failure.messageName = Self.protoMessageName
            throw failure
        }
    }
}

/// Byte arrays for encoded messages.
@usableFromInline
enum EncodingBuffer {
    /// `count` bytes to be overwritten. `[UInt8](unsafeUninitializedCapacity:)` allocates
    /// through the standard library's generic code, which looks up the array's type metadata
    /// (about 650 instructions, more than encoding a small message); `reserveCapacity` is
    /// specialized, and zeros are copied in from a page of them. Larger arrays take the generic
    /// path, whose cost no longer matters beside their encoding.
    @inlinable
    static func bytes(count: Int) -> [UInt8] {
        guard count <= zeros.count else {
            return [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        zeros.withUnsafeBufferPointer { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0.prefix(count))) }
        return bytes
    }

    /// 4 KiB of zeros, the source of `bytes(count:)`'s small arrays.
    @usableFromInline
    static let zeros = [UInt8](repeating: 0, count: 4096)
}
