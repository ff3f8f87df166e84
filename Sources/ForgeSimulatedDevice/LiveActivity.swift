public import ForgeNotificationTypes
public import struct Foundation.Data
public import struct Foundation.Date

/// A Live Activity type an app registered (an `ActivityAttributes` type): the `attributes-type`
/// name that push-to-start payloads give, and how its attributes and content state decode.
public struct LiveActivityType: Sendable {
    /// The name in `aps.attributes-type`.
    public var attributesType: String
    let decodeContentState: @Sendable (Data) throws -> Void
    let decodeAttributes: @Sendable (Data) throws -> Void

    /// Registers a type whose content state (and, optionally, attributes) must decode with a
    /// default `JSONDecoder`.
    public init<ContentState: Decodable & Sendable>(attributesType: String, contentState: ContentState.Type) {
        self.attributesType = attributesType
        self.decodeContentState = { try decodeJSON(ContentState.self, from: $0) }
        self.decodeAttributes = { _ in }
    }

    /// Registers a type whose attributes and content state must decode with a default `JSONDecoder`.
    public init<Attributes: Decodable & Sendable, ContentState: Decodable & Sendable>(
        attributesType: String, attributes: Attributes.Type, contentState: ContentState.Type
    ) {
        self.attributesType = attributesType
        self.decodeContentState = { try decodeJSON(ContentState.self, from: $0) }
        self.decodeAttributes = { try decodeJSON(Attributes.self, from: $0) }
    }

    /// Registers a type with a custom check: `decodeContentState` throws for a content state the
    /// app cannot read.
    public init(attributesType: String, decodeContentState: @escaping @Sendable (Data) throws -> Void) {
        self.attributesType = attributesType
        self.decodeContentState = decodeContentState
        self.decodeAttributes = { _ in }
    }
}

/// Where a Live Activity is in its life.
public enum LiveActivityPhase: Hashable, Sendable, CustomStringConvertible {
    /// Showing current content.
    case active
    /// Its stale date passed without an update (`ActivityState.stale`).
    case stale
    /// Ended; still on the Lock Screen until its dismissal date.
    case ended
    /// Ended and removed.
    case dismissed

    public var description: String {
        switch self {
        case .active: return "active"
        case .stale: return "stale"
        case .ended: return "ended"
        case .dismissed: return "dismissed"
        }
    }
}

/// One applied state of a Live Activity: what a start, update or end push set.
public struct LiveActivityState: Hashable, Sendable {
    /// `start`, `update` or `end`.
    public var event: String
    /// The push's `timestamp` (seconds since 1970).
    public var timestamp: Date
    /// The content state.
    public var contentState: JSONValue
    /// When the content goes stale, if set.
    public var staleDate: Date?
    /// The relevance score, if set.
    public var relevanceScore: Double?
    /// The alert that came with the push, if any.
    public var alert: JSONValue?
}

/// A Live Activity on the device, with its history.
public struct LiveActivity: Hashable, Sendable {
    /// The activity's identifier on the device.
    public var id: String
    /// The app it belongs to.
    public var bundleID: String
    /// Its `attributes-type`.
    public var attributesType: String
    /// The static attributes it was started with.
    public var attributes: JSONValue
    /// The push token for its updates (what the app reports to its server), lower-case hex.
    public var updateToken: String
    /// The broadcast channel it is subscribed to, if any (`input-push-channel`, or
    /// ``SimulatedDevice/subscribe(_:toChannel:)``).
    public var channelID: String?
    /// Where it is in its life.
    public var phase: LiveActivityPhase
    /// When it is removed after ending, if the end push set a dismissal date.
    public var dismissalDate: Date?
    /// Every applied state, oldest first; the last is the current one.
    public var history: [LiveActivityState]

    /// The state now.
    public var current: LiveActivityState? { self.history.last }
}
