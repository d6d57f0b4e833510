extension ServerInterceptor {
    /// Runs `next` and calls `finished` once with the RPC's status when it ends: at once for
    /// an error or a rejected response, else when the response's producer returns or throws.
    /// What logging, metrics and tracing interceptors have in common.
    ///
    /// ```swift
    /// let start = ContinuousClock.now
    /// return try await observing(request, context, next: next) { status in log(status, ContinuousClock.now - start) }
    /// ```
    public func observing<Input: Sendable, Output: Sendable>(
        _ request: StreamingServerRequest<Input>, _ context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>,
        finished: @escaping @Sendable (Status) -> Void
    ) async throws -> StreamingServerResponse<Output> {
        let response: StreamingServerResponse<Output>
        do {
            response = try await next(request, context)
        } catch {
            finished(RPCError.from(error).status)
            throw error
        }
        switch response.accepted {
        case .failure(let error):
            finished(error.status)
            return response
        case .success(let contents):
            return StreamingServerResponse(metadata: contents.metadata) { writer in
                do {
                    let trailers = try await contents.producer(writer)
                    finished(.ok)
                    return trailers
                } catch {
                    finished(RPCError.from(error).status)
                    throw error
                }
            }
        }
    }
}
