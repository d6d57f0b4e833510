import PitlaneCore

/// Who may call the order tracker: bearer tokens mapped to user ids, and the staff users who
/// may read, publish to and create orders for every customer. A customer reaches only their
/// own orders.
public struct OrderAccess: Sendable {
    /// Bearer token → user id.
    public var users: [String: String]
    /// User ids that see every order.
    public var staff: Set<String>

    public init(users: [String: String], staff: Set<String> = []) {
        self.users = users
        self.staff = staff
    }

    /// Parses `token=user,token=user` (the server's `--tokens` option).
    public init(tokens: String, staff: String) throws {
        var users: [String: String] = [:]
        for pair in tokens.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw RPCError(code: .invalidArgument, message: "'\(pair)' is not TOKEN=USER")
            }
            users[String(parts[0])] = String(parts[1])
        }
        self.init(users: users, staff: Set(staff.split(separator: ",").map(String.init)))
    }

    /// The server interceptor: calls to the order tracker need `authorization: Bearer <token>`
    /// (`.unauthenticated` without one or with an unknown one); other services
    /// on the same server (health, chat) pass untouched.
    public func interceptor() -> any ServerInterceptor {
        let users = self.users
        return ServiceScopedInterceptor(
            service: Orders_V1_OrderTracking.descriptor.fullyQualifiedService,
            wrapping: BearerTokenAuthenticationInterceptor { token, _ in users[token] })
    }

    /// The caller of a handler, as the interceptor authenticated it.
    static func caller(_ metadata: Metadata) throws -> String {
        guard let user = metadata[stringValues: BearerTokenAuthenticationInterceptor.identityKey].first else {
            throw RPCError(code: .unauthenticated, message: "a bearer token is required")
        }
        return user
    }

    /// Throws `.permissionDenied` unless `user` may reach an order of `customerID`.
    func authorize(_ user: String, forOrderOf customerID: String, orderID: String) throws {
        guard user == customerID || staff.contains(user) else {
            throw RPCError(code: .permissionDenied, message: "order '\(orderID)' is not yours")
        }
    }
}

/// Runs `wrapping` for the RPCs of one service only.
struct ServiceScopedInterceptor: ServerInterceptor {
    let service: String
    let wrapping: any ServerInterceptor

    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        guard context.descriptor.service.fullyQualifiedService == service else { return try await next(request, context) }
        return try await wrapping.intercept(request: request, context: context, next: next)
    }
}
