/// Server side of bearer-token authentication: calls without `authorization: Bearer <token>`
/// fail with `.unauthenticated`, and so do calls whose token `validate` does not know (gRPC's
/// status codes: invalid credentials are UNAUTHENTICATED; PERMISSION_DENIED is for a known
/// caller without the right, which handlers decide).
/// The identity `validate` returns is added to the request metadata as `x-authenticated-user`
/// for handlers to read (a client cannot forge it: any incoming value is removed first).
public struct BearerTokenAuthenticationInterceptor: ServerInterceptor {
    /// The metadata key that carries the authenticated identity to handlers.
    public static let identityKey = "x-authenticated-user"

    private let validate: @Sendable (_ token: String, _ method: MethodDescriptor) async throws -> String?

    /// Creates an interceptor that accepts the tokens `validate` knows.
    ///
    /// - Parameter validate: returns the identity for a valid token, nil for an invalid one.
    public init(validate: @escaping @Sendable (_ token: String, _ method: MethodDescriptor) async throws -> String?) {
        self.validate = validate
    }

    /// Answers `.unauthenticated` unless the request carries a bearer token `validate` accepts; else passes it on, with the
    /// identity under ``identityKey``.
    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        guard let header = request.metadata[stringValues: "authorization"].first,
            header.lowercased().hasPrefix("bearer "), header.count > 7
        else {
            return StreamingServerResponse(error: RPCError(code: .unauthenticated, message: "a bearer token is required"))
        }
        guard let identity = try await validate(String(header.dropFirst(7)), context.descriptor) else {
            return StreamingServerResponse(error: RPCError(code: .unauthenticated, message: "the bearer token is not valid"))
        }
        var request = request
        request.metadata.removeAllValues(forKey: Self.identityKey)
        request.metadata.addString(identity, forKey: Self.identityKey)
        return try await next(request, context)
    }
}

/// Client side of bearer-token authentication: adds `authorization: Bearer <token>` to every call.
public struct BearerTokenClientInterceptor: ClientInterceptor {
    private let token: @Sendable () async throws -> String

    /// Creates an interceptor that asks `token` for the token to send with each call.
    ///
    /// - Parameter token: called per RPC, so a token can be refreshed.
    public init(token: @escaping @Sendable () async throws -> String) {
        self.token = token
    }

    /// Creates an interceptor that sends the same token with every call.
    public init(token: String) {
        self.init { token }
    }

    /// Sets the call's `authorization` metadata to `Bearer <token>`, replacing any there, and passes it on.
    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingClientRequest<Input>, context: ClientContext,
        next: (StreamingClientRequest<Input>, ClientContext) async throws -> StreamingClientResponse<Output>
    ) async throws -> StreamingClientResponse<Output> {
        var request = request
        request.metadata.replaceOrAddString("Bearer \(try await token())", forKey: "authorization")
        return try await next(request, context)
    }
}
