/// What a client interceptor knows about the call it sees.
public struct ClientContext: Sendable {
    /// The method being called.
    public var descriptor: MethodDescriptor
    /// The options in force (call options merged with the service config).
    public var options: CallOptions

    /// Creates a context for a call to `descriptor` with the options in force.
    public init(descriptor: MethodDescriptor, options: CallOptions) {
        self.descriptor = descriptor
        self.options = options
    }
}

/// Sees every call a client makes, in order of registration (the first is outermost), and
/// may read or change its metadata, reject it, or wrap its streams.
///
/// ```swift
/// struct AddToken: ClientInterceptor {
///     func intercept<Input, Output>(request: StreamingClientRequest<Input>, context: ClientContext,
///         next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
///     ) async throws -> StreamingClientResponse<Output> {
///         var request = request
///         request.metadata.addString("Bearer abc", forKey: "authorization")
///         return try await next(request, context)
///     }
/// }
/// ```
public protocol ClientInterceptor: Sendable {
    /// Handles one call: calls `next` to pass the request on, changed or not, or returns or throws without calling it
    /// to answer the call itself.
    ///
    /// - Parameters:
    ///   - request: The call's metadata and the producer of its request messages.
    ///   - context: The method called and the options in force.
    ///   - next: Passes the call to the next interceptor, or to the transport after the last.
    /// - Returns: The response the caller (or the interceptor before this one) sees.
    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output>
}
