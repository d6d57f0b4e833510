/// Something that accepts the elements of a stream.
public protocol RPCWriterProtocol<Element>: Sendable {
    /// The type of the elements written: messages, or transport parts.
    associatedtype Element: Sendable
    /// Sends an element, waiting while the peer is behind (backpressure).
    func write(_ element: Element) async throws

    /// Sends a message serialized once for many RPCs: its bytes as they are where this
    /// writer's codec made them, else the message. By default, `write(message.message)`.
    func write(serialized message: SerializedMessage<Element>) async throws

    /// Queues an element without waiting, if the writer can: true when it is queued; false
    /// when not now (the peer is behind, the stream has ended, or the writer only writes by
    /// waiting), and the caller writes it with `write` instead, which waits or throws. By
    /// default, false.
    func tryWrite(_ element: Element) -> Bool

    /// ``tryWrite(_:)`` for a message serialized once for many RPCs; by default,
    /// `tryWrite(message.message)`.
    func tryWrite(serialized message: SerializedMessage<Element>) -> Bool

    /// Takes over the rest of the response: `mailbox`'s messages, written with no task, as
    /// ``RPCWriter/deliver(from:ended:)`` describes; false when this writer cannot (then the
    /// caller's task forwards them). By default, false.
    func handOff<Buffer: MailboxBuffer>(
        _ mailbox: Mailbox<Buffer>, ended: @escaping @Sendable (Mailbox<Buffer>.End) -> Void
    ) -> Bool where Buffer.Output == SerializedMessage<Element>
}

extension RPCWriterProtocol {
    /// Writes `message.message`, serializing it again for this RPC.
    public func write(serialized message: SerializedMessage<Element>) async throws {
        try await write(message.message)
    }

    /// Returns false: a writer without a non-waiting path writes only through `write`.
    public func tryWrite(_ element: Element) -> Bool { false }

    /// Tries to queue `message.message` with ``tryWrite(_:)``.
    public func tryWrite(serialized message: SerializedMessage<Element>) -> Bool {
        tryWrite(message.message)
    }

    /// Returns false: the caller's task forwards the mailbox's messages.
    public func handOff<Buffer: MailboxBuffer>(
        _ mailbox: Mailbox<Buffer>, ended: @escaping @Sendable (Mailbox<Buffer>.End) -> Void
    ) -> Bool where Buffer.Output == SerializedMessage<Element> {
        false
    }
}

/// A writer that can also end its stream.
public protocol ClosableRPCWriterProtocol<Element>: RPCWriterProtocol {
    /// Ends the stream cleanly, or with an error.
    func finish(throwing error: (any Error)?) async

    /// Whether ``whenReady(_:)`` and ``finishWithoutWaiting(_:)`` work: a response can be
    /// written with no task waiting. By default, false.
    var writesWithoutTask: Bool { get }

    /// Runs `body` once, never from within this call, when ``RPCWriterProtocol/tryWrite(_:)``
    /// would take a message again; false (and `body` never runs) when the stream has ended
    /// or the writer cannot tell. By default, false.
    func whenReady(_ body: @escaping @Sendable () -> Void) -> Bool

    /// Ends the stream without waiting, from any thread: `part` (a status) queued after what
    /// is queued, or the stream abandoned when it is nil (as ``finish(throwing:)`` with an
    /// error). Only where ``writesWithoutTask``; by default, does nothing.
    func finishWithoutWaiting(_ part: Element?)
}

extension ClosableRPCWriterProtocol {
    /// Returns false.
    public var writesWithoutTask: Bool { false }
    /// Returns false: `body` never runs.
    public func whenReady(_ body: @escaping @Sendable () -> Void) -> Bool { false }
    /// Does nothing.
    public func finishWithoutWaiting(_ part: Element?) {}
}

/// Writes the messages of a stream: request messages on a client, responses on a server.
///
/// ```swift
/// try await writer.write(.with { $0.raceName = "Duck Pond Dash" })
/// ```
public struct RPCWriter<Element: Sendable>: Sendable, RPCWriterProtocol {
    private let writer: any RPCWriterProtocol<Element>

    /// Wraps any writer, hiding its type.
    public init(wrapping writer: some RPCWriterProtocol<Element>) {
        self.writer = writer
    }

    /// Sends an element, waiting while the peer is behind; throws if the stream has ended or failed.
    public func write(_ element: Element) async throws {
        try await writer.write(element)
    }

    /// Sends a message serialized once for many RPCs (see ``SerializedMessage``): on an RPC
    /// with the binary codec its bytes go as they are, with no serializing per RPC.
    public func write(serialized message: SerializedMessage<Element>) async throws {
        try await writer.write(serialized: message)
    }

    /// Queues an element without waiting, if the transport can take it now (see
    /// ``RPCWriterProtocol/tryWrite(_:)``); when false, `write` it instead.
    public func tryWrite(_ element: Element) -> Bool {
        writer.tryWrite(element)
    }

    /// Hands the rest of the response to the wrapped writer, if it can take it; see
    /// ``deliver(from:ended:)``.
    public func handOff<Buffer: MailboxBuffer>(
        _ mailbox: Mailbox<Buffer>, ended: @escaping @Sendable (Mailbox<Buffer>.End) -> Void
    ) -> Bool where Buffer.Output == SerializedMessage<Element> {
        writer.handOff(mailbox, ended: ended)
    }

    /// Queues a message serialized once for many RPCs without waiting, if the transport can
    /// take it now: what a publisher calls for each of many followers, no task waking per
    /// message; when false, `write(serialized:)` it instead.
    public func tryWrite(serialized message: SerializedMessage<Element>) -> Bool {
        writer.tryWrite(serialized: message)
    }

    /// Sends each element in order, waiting while the peer is behind; throws at the first write that fails.
    public func write(contentsOf elements: some Sequence<Element>) async throws {
        for element in elements { try await write(element) }
    }

    /// Writes the rest of the response from `mailbox`: each message is queued as it is
    /// offered, and what the client is not ready for waits in the mailbox, under its
    /// buffer's policy. The RPC ends when the mailbox does — finished: with the handler's
    /// status and trailing metadata; failed: with the error — and `ended` runs then, once,
    /// with how; when the RPC ends first (cancelled, its deadline, the connection gone), the
    /// mailbox is ended with that (`CancellationError`).
    ///
    /// Where the transport can (a server's stream, on a server without interceptors), this
    /// returns at once and no task waits for the mailbox: the handler returns, and an idle
    /// subscriber costs its mailbox and its stream, not a task's stack. Elsewhere it forwards
    /// from the calling task until the mailbox ends, and throws its error: a server
    /// interceptor (tracing, an access log) sees a response end when its producer returns,
    /// and a client's writer has no such path.
    ///
    /// ```swift
    /// let follower = race.follow()  // a Mailbox of SerializedMessage<Position>
    /// try await response.deliver(from: follower) { _ in race.leave(follower) }
    /// ```
    public func deliver<Buffer: MailboxBuffer>(
        from mailbox: Mailbox<Buffer>, ended: @escaping @Sendable (Mailbox<Buffer>.End) -> Void
    ) async throws where Buffer.Output == SerializedMessage<Element> {
        if writer.handOff(mailbox, ended: ended) { return }
        do {
            try await mailbox.forward(trying: { tryWrite(serialized: $0) }) { try await write(serialized: $0) }
        } catch {
            ended(.failed(error))
            throw error
        }
        ended(.finished)
    }

    /// A writer that can end its stream.
    public struct Closable: ClosableRPCWriterProtocol {
        private let writer: any ClosableRPCWriterProtocol<Element>

        /// Wraps any closable writer, hiding its type.
        public init(wrapping writer: some ClosableRPCWriterProtocol<Element>) {
            self.writer = writer
        }

        /// Sends an element, waiting while the peer is behind; throws if the stream has ended or failed.
        public func write(_ element: Element) async throws {
            try await writer.write(element)
        }

        /// Sends a message serialized once for many RPCs (see ``RPCWriter/write(serialized:)``).
        public func write(serialized message: SerializedMessage<Element>) async throws {
            try await writer.write(serialized: message)
        }

        /// Queues an element without waiting, if the writer can take it now; when false, `write` it instead.
        public func tryWrite(_ element: Element) -> Bool {
            writer.tryWrite(element)
        }

        /// Queues a message serialized once for many RPCs without waiting, if the writer can take it now.
        public func tryWrite(serialized message: SerializedMessage<Element>) -> Bool {
            writer.tryWrite(serialized: message)
        }

        /// Ends the stream: cleanly when `error` is nil (the default), else with `error`.
        public func finish(throwing error: (any Error)? = nil) async {
            await writer.finish(throwing: error)
        }

        /// Whether the wrapped writer writes with no task waiting.
        public var writesWithoutTask: Bool { writer.writesWithoutTask }

        /// Runs `body` once the wrapped writer would take a message again; see
        /// ``ClosableRPCWriterProtocol/whenReady(_:)``.
        public func whenReady(_ body: @escaping @Sendable () -> Void) -> Bool {
            writer.whenReady(body)
        }

        /// Ends the stream without waiting; see ``ClosableRPCWriterProtocol/finishWithoutWaiting(_:)``.
        public func finishWithoutWaiting(_ part: Element?) {
            writer.finishWithoutWaiting(part)
        }
    }
}

/// A writer into a `BufferedStream`.
struct BufferedStreamWriter<Element: Sendable>: ClosableRPCWriterProtocol {
    let stream: BufferedStream<Element>

    func write(_ element: Element) async throws {
        try await stream.write(element)
    }

    func finish(throwing error: (any Error)?) async {
        stream.finish(throwing: error)
    }
}

/// A writer that transforms elements before passing them on.
struct MappingWriter<Element: Sendable, Target: Sendable>: RPCWriterProtocol {
    let target: any RPCWriterProtocol<Target>
    let transform: @Sendable (Element) throws -> Target
    /// For messages serialized once for many RPCs: their bytes, where the codec matches.
    let transformSerialized: @Sendable (SerializedMessage<Element>) throws -> Target

    func write(_ element: Element) async throws {
        try await target.write(transform(element))
    }

    func write(serialized message: SerializedMessage<Element>) async throws {
        try await target.write(transformSerialized(message))
    }

    /// A message that cannot be transformed is not queued: `write` then throws the error.
    func tryWrite(_ element: Element) -> Bool {
        guard let transformed = try? transform(element) else { return false }
        return target.tryWrite(transformed)
    }

    func tryWrite(serialized message: SerializedMessage<Element>) -> Bool {
        guard let transformed = try? transformSerialized(message) else { return false }
        return target.tryWrite(transformed)
    }
}

extension MappingWriter {
    /// Writes each message serialized by `serializer` (or as serialized once, for
    /// ``SerializedMessage``s), its bytes made into a part by `part`.
    init(
        target: any RPCWriterProtocol<Target>, serializer: some MessageSerializer<Element>,
        part: @escaping @Sendable ([UInt8]) throws -> Target
    ) {
        self.init(
            target: target, transform: { try part(serializer.serialize($0)) },
            transformSerialized: { try part(serializer.serialize($0)) })
    }
}
