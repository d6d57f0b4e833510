/// What a screen shows of an order, apart from the generated messages: built from a snapshot,
/// changed by each update.
public struct OrderViewState: Sendable, Equatable {
    public struct Coordinate: Sendable, Equatable {
        public var latitude: Double
        public var longitude: Double
    }

    public struct TimelineRow: Sendable, Equatable {
        public var id: String
        public var title: String
        public var subtitle: String
    }

    public var id: String
    public var status: OrderStatus
    public var etaText: String
    public var timeline: [TimelineRow]
    public var courier: Coordinate?

    public init(_ snapshot: OrderSnapshot) {
        id = snapshot.orderID
        status = snapshot.status
        etaText = snapshot.etaDisplay
        timeline = snapshot.timeline.map { TimelineRow(id: $0.id, title: $0.title, subtitle: $0.subtitle) }
        courier = snapshot.hasCourier ? Coordinate(latitude: snapshot.courier.latitude, longitude: snapshot.courier.longitude) : nil
    }

    public mutating func apply(_ update: OrderUpdate) {
        switch update.event {
        case .statusChanged(let change): status = change.status
        case .etaChanged(let change): etaText = change.etaDisplay
        case .courierMoved(let move): courier = Coordinate(latitude: move.latitude, longitude: move.longitude)
        case .timelineEvent(let entry): timeline.append(TimelineRow(id: entry.id, title: entry.title, subtitle: entry.subtitle))
        case nil: break  // a position marker
        }
    }

    /// The status as people read it.
    public var statusText: String { Self.text(for: status) }

    public static func text(for status: OrderStatus) -> String {
        switch status {
        case .received: "received"
        case .preparing: "preparing"
        case .outForDelivery: "out for delivery"
        case .delivered: "delivered"
        case .canceled: "canceled"
        case .unspecified, .UNRECOGNIZED: "unknown"
        }
    }
}
