import Synchronization

extension RPCAsyncSequence where Failure == any Error {
    /// What ``delivering(to:while:)`` hands over: `.success(element)` for each element,
    /// `.success(nil)` at a clean end, `.failure(error)` when the sequence fails.
    public typealias Delivery = Result<Element?, any Error>

    /// Runs `body` while the sequence's elements are handed to `receive` as they arrive, for a
    /// handler whose task waits on something else meanwhile: a bidirectional RPC that forwards
    /// events to its client while the client's requests change what it forwards.
    ///
    /// ```swift
    /// try await requests.delivering(to: { request in
    ///     if case .success(let change?) = request { subscription.update(change) }
    /// }) {
    ///     try await subscription.forward(to: response)
    /// }
    /// ```
    ///
    /// A server's request messages (and any transport's stream) are delivered with no task
    /// waiting for them: each is decoded and handed over on the thread that received it, so a
    /// stream costs no second task. Other sequences (an interceptor's own) are read by a child
    /// task. Either way `receive` is called once at a time, in order, never after this returns,
    /// and after the end or a failure not again; it must not wait. `body` reading the sequence
    /// too is a programming error.
    ///
    /// Inlinable, so that its frame under `body` is compiled for the caller's types: a
    /// generic frame allocates its values on the task, and a task keeps the slabs of its
    /// deepest stack for as long as it runs.
    @inlinable
    public func delivering<T>(
        to receive: @escaping @Sendable (Delivery) -> Void, while body: () async throws -> T
    ) async throws -> T {
        // Only a reference and the result live in this frame across `body`; the fallback's
        // task group is a call of its own.
        guard let stop = startDelivering(to: receive) else {
            return try await deliveringFromTask(to: receive, while: body)
        }
        defer { stop() }
        return try await body()
    }

    /// Hands the elements to `receive` as they arrive, with no task waiting for them, until
    /// the sequence ends or the returned function stops it (from anywhere but `receive`:
    /// `receive` is not called after it returns); nil when this sequence cannot (an
    /// interceptor's own: read it with ``delivering(to:while:)``). For a handler that
    /// returns while its response goes on without a task (``RPCWriter/deliver(from:ended:)``)
    /// and its client's requests still matter. `receive` is called as
    /// ``delivering(to:while:)`` says.
    public func startDelivering(to receive: @escaping @Sendable (Delivery) -> Void) -> (@Sendable () -> Void)? {
        switch source {
        case .stream(let stream):
            let receiver = BufferedStream<Element>.Receiver(receive)
            stream.deliver(to: receiver)
            return { stream.stopDelivering(to: receiver) }
        case .decoding(let messages):
            let decoding = DecodingDelivery(messages: messages, receive: receive)
            let receiver = BufferedStream<RPCRequestPart>.Receiver { decoding.deliver($0) }
            messages.parts.deliver(to: receiver)
            return { messages.parts.stopDelivering(to: receiver) }
        case .next, .sequence:
            return nil
        }
    }

    /// ``delivering(to:while:)`` for a sequence read by a child task.
    @inlinable @inline(never)
    func deliveringFromTask<T>(
        to receive: @escaping @Sendable (Delivery) -> Void, while body: () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            let receiver = BufferedStream<Element>.Receiver(receive)
            group.addTask {
                do {
                    for try await element in self { receiver.receive(.success(element)) }
                    receiver.receive(.success(nil))
                } catch {
                    receiver.receive(.failure(error))
                }
            }
            defer {
                receiver.close()
                group.cancelAll()
            }
            return try await body()
        }
    }
}

/// Decodes request parts as they are delivered; once one fails to decode, the sequence has
/// failed and what follows is dropped.
final class DecodingDelivery<Element: Sendable>: Sendable {
    let messages: RequestMessages<Element>
    let receive: @Sendable (Result<Element?, any Error>) -> Void
    /// Touched only by `deliver`, which the receiver's lock keeps to one call at a time.
    private let failed = Atomic(false)

    init(messages: RequestMessages<Element>, receive: @escaping @Sendable (Result<Element?, any Error>) -> Void) {
        self.messages = messages
        self.receive = receive
    }

    func deliver(_ part: Result<RPCRequestPart?, any Error>) {
        guard !failed.load(ordering: .relaxed) else { return }
        let message = part.flatMap { part in Result { try part.map { try messages.decode($0) } } }
        if case .failure = message { failed.store(true, ordering: .relaxed) }
        receive(message)
    }
}
