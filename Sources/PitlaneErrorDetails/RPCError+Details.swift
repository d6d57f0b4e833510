import PitlaneCore
import PitlaneProtobuf

/// Rich errors: `google.rpc.Status` with typed details in the `grpc-status-details-bin`
/// trailer, which every gRPC implementation's status helpers read (grpcio-status,
/// grpc-go's `status.FromError`, grpc-java's `StatusProto`).
///
/// ```swift
/// throw try RPCError(code: .outOfRange, message: "the update is no longer kept", details: [
///     Google_Rpc_ErrorInfo.with { $0.reason = "UPDATE_EXPIRED"; $0.domain = "orders.pitlane.dev" },
/// ])
/// // On the client:
/// if let info = error.detail(Google_Rpc_ErrorInfo.self) { print(info.reason) }
/// ```
extension RPCError {
    /// The trailer that carries the serialized `google.rpc.Status`.
    public static let statusDetailsKey = Metadata.statusDetailsKey

    /// An error whose trailers carry `google.rpc.Status` with `details` (each packed in an
    /// `Any`), beside the usual status code and message.
    public init(code: Code, message: String, details: [any Message], metadata: Metadata = [:]) throws {
        let status = try Google_Rpc_Status.with {
            $0.code = Int32(code.status.rawValue)
            $0.message = message
            $0.details = try details.map { try Google_Protobuf_Any(message: $0) }
        }
        var metadata = metadata
        metadata.addBinary(try status.serializedBytes(), forKey: Self.statusDetailsKey)
        self.init(code: code, message: message, metadata: metadata)
    }

    /// The `google.rpc.Status` the trailers carry, if any (nil also when it does not parse).
    public var richStatus: Google_Rpc_Status? {
        guard let bytes = metadata[binaryValues: Self.statusDetailsKey].first else { return nil }
        return try? Google_Rpc_Status(serializedBytes: bytes)
    }

    /// The first detail of type `T`, unpacked; nil when there is none.
    public func detail<T: Message>(_ type: T.Type) -> T? {
        guard let any = richStatus?.details.first(where: { $0.isA(T.self) }) else { return nil }
        return try? T(unpackingAny: any)
    }
}
