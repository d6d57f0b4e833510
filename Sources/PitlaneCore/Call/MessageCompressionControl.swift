import Synchronization

/// Per-message compression for one RPC, shared by the code that writes and reads its messages
/// and the RPC machinery beneath: whether the messages written next are compressed, and
/// whether the message read last arrived compressed.
///
/// A server handler finds one in `ServerContext.messageCompression`; a client passes one in
/// `CallOptions.messageCompression`.
///
/// ```swift
/// context.messageCompression.compressesWrites = false   // the next responses go uncompressed
/// try await writer.write(response)
/// ```
public final class MessageCompressionControl: Sendable {
    // Atomics, not a lock: read for every message written, and set for every one read.
    // Each is advisory for the message at hand; a task's own writes and reads are ordered
    // by the task.
    private let writesCompressed = Atomic(true)
    private let lastReadCompressed = Atomic(false)

    /// Creates a control that compresses writes and has read nothing yet.
    public init() {}

    /// Whether messages written from now on are compressed, when the RPC compresses its
    /// messages (the client's `CallOptions.compression`, the server transport's response
    /// compression). Default true; false sends them uncompressed.
    public var compressesWrites: Bool {
        get { writesCompressed.load(ordering: .relaxed) }
        set { writesCompressed.store(newValue, ordering: .relaxed) }
    }

    /// Whether the message read most recently arrived compressed on the wire.
    public var lastReadWasCompressed: Bool {
        lastReadCompressed.load(ordering: .relaxed)
    }

    /// The flags for a message about to be written.
    @usableFromInline var flagsForWrite: MessageFlags {
        compressesWrites ? [] : .noCompression
    }

    /// Notes the flags of a message just read.
    @usableFromInline func recordRead(_ flags: MessageFlags) {
        lastReadCompressed.store(flags.contains(.compressed), ordering: .relaxed)
    }
}
