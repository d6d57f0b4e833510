import PitlaneCore
import Synchronization

/// A client's response parts, passed through, telling `onEnd` once how the call ended: OK at
/// its trailers (or the end of the parts), or the error's status; and `events`, when set, of
/// each message read.
struct EndingSequence<Message: Sendable>: AsyncSequence, Sendable {
    typealias Element = StreamingClientResponse<Message>.BodyPart

    let base: RPCAsyncSequence<Element, any Error>
    let events: MessageEvents?
    let onEnd: @Sendable (Status) -> Void

    final class Once: Sendable {
        private let done = Atomic(false)
        func first() -> Bool { !done.exchange(true, ordering: .relaxed) }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RPCAsyncSequence<Element, any Error>.AsyncIterator
        let events: MessageEvents?
        let onEnd: @Sendable (Status) -> Void
        let once = Once()

        mutating func next() async throws -> Element? {
            do {
                let element = try await base.next()
                switch element {
                case .trailingMetadata?, nil:
                    if once.first() { onEnd(.ok) }
                case .message(let message)?:
                    events?.received(message)
                }
                return element
            } catch {
                if once.first() { onEnd(RPCError.from(error).status) }
                throw error
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), events: events, onEnd: onEnd)
    }
}
