/// What a client interceptor knows about the call it sees.
public struct ClientContext: Sendable {
    public var descriptor: MethodDescriptor
    /// The options in force (call options merged with the service config).
    public var options: CallOptions

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
    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output>
}
