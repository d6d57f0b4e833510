/// A sequence passed through, telling `failed` about the error that ends it, if one does: a
/// client's response parts, so that an attempt that fails mid-stream (a lost connection, a
/// message over the limit) ends with its error's code in the client's metrics.
struct FailureObservingSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
    typealias Element = Base.Element

    let base: Base
    let failed: @Sendable (any Error) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let failed: @Sendable (any Error) -> Void

        mutating func next() async throws -> Element? {
            try await next(isolation: nil)
        }

        mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
            do {
                return try await base.next(isolation: actor)
            } catch {
                failed(error)
                throw error
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), failed: failed)
    }
}
