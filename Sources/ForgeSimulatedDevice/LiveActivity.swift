internal import ForgeAPNsCore
public import ForgeNotificationTypes
internal import ForgeSupport
public import struct Foundation.Data
public import struct Foundation.Date
public import class Foundation.JSONDecoder

/// A Live Activity type an app registered (an `ActivityAttributes` type): the `attributes-type`
/// name that push-to-start payloads give, and how its attributes and content state decode.
public struct LiveActivityType: Sendable {
    /// The name in `aps.attributes-type`.
    public var attributesType: String
    let decodeContentState: @Sendable (Data) throws -> Void
    let decodeAttributes: @Sendable (Data) throws -> Void
    /// The `Date`s a content state decodes to, each with its path; `nil` when the type is a custom
    /// check (then date-like keys holding numbers are taken for dates, as the lints do).
    let contentStateDates: (@Sendable (Data) -> [DecodedDate])?

    /// Registers a type whose content state (and, optionally, attributes) must decode with a
    /// default `JSONDecoder`.
    public init<ContentState: Decodable & Sendable>(attributesType: String, contentState: ContentState.Type) {
        self.attributesType = attributesType
        self.decodeContentState = { try decodeJSON(ContentState.self, from: $0) }
        self.decodeAttributes = { _ in }
        self.contentStateDates = { DecodedDate.all(in: ContentState.self, from: $0) }
    }

    /// Registers a type whose attributes and content state must decode with a default `JSONDecoder`.
    public init<Attributes: Decodable & Sendable, ContentState: Decodable & Sendable>(
        attributesType: String, attributes: Attributes.Type, contentState: ContentState.Type
    ) {
        self.attributesType = attributesType
        self.decodeContentState = { try decodeJSON(ContentState.self, from: $0) }
        self.decodeAttributes = { try decodeJSON(Attributes.self, from: $0) }
        self.contentStateDates = { DecodedDate.all(in: ContentState.self, from: $0) }
    }

    /// Registers a type with a custom check: `decodeContentState` throws for a content state the
    /// app cannot read.
    public init(attributesType: String, decodeContentState: @escaping @Sendable (Data) throws -> Void) {
        self.attributesType = attributesType
        self.decodeContentState = decodeContentState
        self.decodeAttributes = { _ in }
        self.contentStateDates = nil
    }

    /// Registers a type described by a contract (``LiveActivityContract``): its content state and,
    /// when the contract gives them, its attributes decode as the app's types would; a failure names
    /// the field, the type expected and the value.
    public init(contract: LiveActivityContract) {
        self.attributesType = contract.attributesType
        self.decodeContentState = { data throws(LiveActivityContract.Mismatch) in try contract.checkContentState(data) }
        self.decodeAttributes = { data throws(LiveActivityContract.Mismatch) in try contract.checkAttributes(data) }
        self.contentStateDates = nil
    }

    /// The dates `contentState` holds for the app: what its `ContentState` decodes as `Date`s, or
    /// for a custom check, the numbers under date-like keys (``APNSLinter``'s reading).
    func decodedDates(_ contentState: JSONValue) -> [DecodedDate] {
        if let contentStateDates { return contentStateDates(contentState.jsonData) }
        return DecodedDate.dateLike(contentState, path: [])
    }
}

/// A `Date` as the app decodes it: its path in the content state and the number sent.
struct DecodedDate: Sendable, Hashable {
    var path: String
    var seconds: Double

    /// Decodes `data` as `Value` with a `JSONDecoder` that reads dates as the default strategy does
    /// (seconds since 2001-01-01, https://developer.apple.com/documentation/foundation/jsondecoder/datedecodingstrategy/defertodate)
    /// and notes each one.
    static func all<Value: Decodable>(in type: Value.Type, from data: Data) -> [DecodedDate] {
        let found = LockedBox<[DecodedDate]>([])
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let seconds = try decoder.singleValueContainer().decode(Double.self)
            let path = decoder.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            found.withLock { $0.append(DecodedDate(path: path, seconds: seconds)) }
            return Date(timeIntervalSinceReferenceDate: seconds)
        }
        _ = try? decoder.decode(Value.self, from: data)
        return found.withLock { $0 }
    }

    /// Numbers under date-like keys (``APNSLinter/isDateLike(_:)``), nested objects included.
    static func dateLike(_ value: JSONValue, path: [String]) -> [DecodedDate] {
        guard let object = value.objectValue else { return [] }
        return object.keys.sorted().flatMap { key -> [DecodedDate] in
            let child = object[key] ?? .null
            if child.objectValue != nil { return Self.dateLike(child, path: path + [key]) }
            guard APNSLinter.isDateLike(key), let seconds = child.doubleValue else { return [] }
            return [DecodedDate(path: (path + [key]).joined(separator: "."), seconds: seconds)]
        }
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
    /// The push token for its updates (what the app reports to its server), lower-case hex; empty
    /// while the activity awaits the person's permission (``isAwaitingPermission``): iOS has issued
    /// none yet.
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
    /// When it started on the device (the device clock): iOS ends it
    /// ``SimulatedDevice/maximumActivityDuration`` later.
    public var startedAt: Date
    /// Whether the activity, started remotely on a phone that asks first
    /// (``SimulatedDevice/asksBeforeActivities``), is on the Lock Screen waiting for the person to
    /// tap Allow or Don't Allow: it shows its start content but has no update token yet.
    public var isAwaitingPermission: Bool = false

    /// The state now.
    public var current: LiveActivityState? { self.history.last }
}
