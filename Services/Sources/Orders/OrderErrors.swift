import PitlaneLive

/// How the order tracker's errors name things: the `google.rpc.ErrorInfo` domain and field a
/// client reads (`error.detail(Google_Rpc_ErrorInfo.self)?.reason`), and what a client whose
/// update id no longer resumes should do.
public enum OrderErrors {
    /// `ErrorInfo.domain` of every order tracker error.
    public static let domain = "orders.pitlane.dev"

    /// The order feed's names for `FeedError`s: `order_id`, "order", bootstrap with GetOrder.
    public static let names = FeedNames(
        domain: domain, keyField: "order_id", noun: "order", restart: "call GetOrder again and watch from its latest_update_id")
}
